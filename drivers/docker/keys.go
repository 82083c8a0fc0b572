package docker

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/drover-project/drover/drivers"
)

// The container keys of Nomad's docker driver beyond image, command and
// the security keys: each is parsed here and passed to the container by
// containerSpec (runtime.go).

// containerKeys is the parsed form of those keys.
type containerKeys struct {
	AuthSoftFail       bool
	PortMap            map[string]int // label → container port
	Hostname           string
	DNSServers         []string
	DNSSearchDomains   []string
	DNSOptions         []string
	ExtraHosts         []string
	Logging            *loggingConfig
	Sysctl             map[string]string
	Ulimits            []ulimitSpec
	ShmSize            int64
	Init               bool
	ReadonlyRootfs     bool
	Interactive        bool
	TTY                bool
	Load               string // tarball, relative to the task dir
	MemoryHardLimitMB  int
	CPUHardLimit       bool
	CPUCFSPeriod       int // microseconds; 0 = Docker's 100000
	PidsLimit          int64
	OOMScoreAdj        int
	GroupAdd           []string
	StorageOpt         map[string]string
	HealthcheckDisable bool
	MacAddress         string // the container's MAC on Docker's bridge
	CgroupNS           string // "host" or "private"; "" is Docker's default
	CpusetCPUs         string // e.g. "0-2,4"
}

// loggingConfig is the logging block: the container's Docker log driver.
type loggingConfig struct {
	Type   string
	Config map[string]string
}

// ulimitSpec is one ulimit entry: name = "soft[:hard]".
type ulimitSpec struct {
	Name       string
	Soft, Hard int64
}

var containerKeyFields = []string{
	"auth_soft_fail", "port_map", "hostname", "dns_servers", "dns_search_domains", "dns_options",
	"extra_hosts", "logging", "sysctl", "ulimit", "shm_size", "init", "readonly_rootfs",
	"interactive", "tty", "load", "memory_hard_limit", "cpu_hard_limit", "cpu_cfs_period",
	"pids_limit", "oom_score_adj", "group_add", "storage_opt", "healthchecks",
	"mac_address", "cgroupns", "cpuset_cpus",
}

// ulimitNames are the resources Docker accepts in a ulimit.
var ulimitNames = []string{
	"core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice", "nofile", "nproc",
	"rss", "rtprio", "rttime", "sigpending", "stack",
}

// readableLogDrivers keep the output readable through the engine's log
// API, which the driver copies to the task's log files (alloc logs, log
// rotation). Other drivers are read through Docker's dual logging cache
// (Docker 20.10 and later), which "cache-disabled" turns off.
var readableLogDrivers = []string{"json-file", "local", "journald"}

// parseContainerKeys reads the container keys of a task config.
func parseContainerKeys(m map[string]any) (containerKeys, error) {
	var k containerKeys
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	fe := func(field, rule string) { errs = append(errs, &drivers.FieldError{Field: field, Rule: rule}) }
	boolKey := func(key string, dst *bool) {
		b, _, err := drivers.ConfigBool(m, key)
		add(err)
		*dst = b
	}
	boolKey("auth_soft_fail", &k.AuthSoftFail)
	boolKey("init", &k.Init)
	boolKey("readonly_rootfs", &k.ReadonlyRootfs)
	boolKey("interactive", &k.Interactive)
	boolKey("tty", &k.TTY)
	boolKey("cpu_hard_limit", &k.CPUHardLimit)

	var err error
	k.Hostname, _, err = drivers.ConfigString(m, "hostname")
	add(err)
	// Docker takes any name the kernel does (an interpolated
	// "${NOMAD_ALLOC_NAME}" has brackets); only blanks are surely wrong.
	if err == nil && k.Hostname != "" && strings.ContainsAny(k.Hostname, " \t\n/") {
		fe("hostname", fmt.Sprintf("must be a host name without blanks or '/', got %q", k.Hostname))
	}

	k.DNSServers, _, err = drivers.ConfigStringSlice(m, "dns_servers")
	add(err)
	for i, s := range k.DNSServers {
		if net.ParseIP(s) == nil {
			fe(fmt.Sprintf("dns_servers[%d]", i), fmt.Sprintf("must be an IP address, got %q", s))
		}
	}
	k.DNSSearchDomains, _, err = drivers.ConfigStringSlice(m, "dns_search_domains")
	add(err)
	for i, s := range k.DNSSearchDomains {
		if s == "" || strings.ContainsAny(s, " \t") {
			fe(fmt.Sprintf("dns_search_domains[%d]", i), fmt.Sprintf("must be a domain name, got %q", s))
		}
	}
	k.DNSOptions, _, err = drivers.ConfigStringSlice(m, "dns_options")
	add(err)
	for i, s := range k.DNSOptions {
		if s == "" || strings.ContainsAny(s, " \t") {
			fe(fmt.Sprintf("dns_options[%d]", i), fmt.Sprintf("must be a resolv.conf option such as \"ndots:2\", got %q", s))
		}
	}
	k.ExtraHosts, _, err = drivers.ConfigStringSlice(m, "extra_hosts")
	add(err)
	for i, s := range k.ExtraHosts {
		host, ip, ok := strings.Cut(s, ":")
		if !ok || host == "" || (net.ParseIP(ip) == nil && ip != "host-gateway") {
			fe(fmt.Sprintf("extra_hosts[%d]", i), fmt.Sprintf("must be \"host:IP\", got %q", s))
		}
	}
	k.GroupAdd, _, err = drivers.ConfigStringSlice(m, "group_add")
	add(err)
	for i, s := range k.GroupAdd {
		if strings.TrimSpace(s) == "" {
			fe(fmt.Sprintf("group_add[%d]", i), "must be a group name or ID")
		}
	}

	k.MacAddress, _, err = drivers.ConfigString(m, "mac_address")
	add(err)
	if _, perr := net.ParseMAC(k.MacAddress); err == nil && k.MacAddress != "" && (perr != nil || len(k.MacAddress) != 17) {
		fe("mac_address", fmt.Sprintf("must be a MAC address such as \"02:42:ac:11:00:02\", got %q", k.MacAddress))
	}
	k.CgroupNS, _, err = drivers.ConfigString(m, "cgroupns")
	add(err)
	if err == nil && k.CgroupNS != "" && k.CgroupNS != "host" && k.CgroupNS != "private" {
		fe("cgroupns", fmt.Sprintf("must be \"host\" or \"private\", got %q", k.CgroupNS))
	}
	k.CpusetCPUs, _, err = drivers.ConfigString(m, "cpuset_cpus")
	add(err)
	if err == nil && k.CpusetCPUs != "" && !validCPUList(k.CpusetCPUs) {
		fe("cpuset_cpus", fmt.Sprintf("must be a list of CPUs such as \"0-2,4\", got %q", k.CpusetCPUs))
	}

	k.PortMap, err = intMap(m, "port_map")
	add(err)
	for _, label := range sortedKeys(k.PortMap) {
		if p := k.PortMap[label]; p < 1 || p > 65535 {
			fe("port_map."+label, fmt.Sprintf("must be a container port between 1 and 65535, got %d", p))
		}
	}

	k.Sysctl, err = scalarMap(m, "sysctl")
	add(err)
	for _, name := range sortedKeys(k.Sysctl) {
		if name == "" || strings.ContainsAny(name, " \t=") {
			fe("sysctl."+name, "must be a sysctl name such as \"net.core.somaxconn\"")
		}
	}
	k.StorageOpt, err = scalarMap(m, "storage_opt")
	add(err)

	ulimits, err := scalarMap(m, "ulimit")
	add(err)
	for _, name := range sortedKeys(ulimits) {
		u, err := parseUlimit(name, ulimits[name])
		if err != nil {
			fe("ulimit."+name, err.Error())
			continue
		}
		k.Ulimits = append(k.Ulimits, u)
	}

	intKey := func(key string, min, max int, rule string) (int, bool) {
		n, ok, err := drivers.ConfigInt(m, key)
		if err != nil {
			add(err)
			return 0, false
		}
		if ok && (n < min || n > max) {
			fe(key, fmt.Sprintf("%s, got %d", rule, n))
			return 0, false
		}
		return n, ok
	}
	if n, ok := intKey("shm_size", 1, 1<<50, "must be a positive number of bytes"); ok {
		k.ShmSize = int64(n)
	}
	k.MemoryHardLimitMB, _ = intKey("memory_hard_limit", 1, 1<<30, "must be a positive number of megabytes")
	k.CPUCFSPeriod, _ = intKey("cpu_cfs_period", 1000, 1000000, "must be between 1000 and 1000000 microseconds")
	if n, ok := intKey("pids_limit", 1, 1<<30, "must be a positive number of processes"); ok {
		k.PidsLimit = int64(n)
	}
	// A negative score would shield the task from the OOM killer, at the
	// expense of the node's other processes: as in Nomad, positive only.
	k.OOMScoreAdj, _ = intKey("oom_score_adj", 0, 1000, "must be between 0 and 1000")

	k.Load, _, err = drivers.ConfigString(m, "load")
	add(err)
	if err == nil && k.Load != "" && filepath.IsAbs(k.Load) {
		fe("load", fmt.Sprintf("must be a path relative to the task directory (where an artifact lands), got %q", k.Load))
	}

	k.Logging, err = parseLogging(m)
	add(err)

	hc, err := blockList(m, "healthchecks")
	add(err)
	for _, b := range hc {
		if err := drivers.CheckFields(b, "disable"); err != nil {
			add(fmt.Errorf("healthchecks: %w", err))
		}
		d, _, err := drivers.ConfigBool(b, "disable")
		if err != nil {
			add(fmt.Errorf("healthchecks: %w", err))
		}
		k.HealthcheckDisable = k.HealthcheckDisable || d
	}
	return k, errors.Join(errs...)
}

// parseLogging reads the logging block.
func parseLogging(m map[string]any) (*loggingConfig, error) {
	blocks, err := blockList(m, "logging")
	if err != nil || len(blocks) == 0 {
		return nil, err
	}
	if len(blocks) > 1 {
		return nil, &drivers.FieldError{Field: "logging", Rule: "must be given at most once"}
	}
	b := blocks[0]
	var errs []error
	if err := drivers.CheckFields(b, "type", "config"); err != nil {
		errs = append(errs, fmt.Errorf("logging: %w", err))
	}
	lc := &loggingConfig{}
	lc.Type, _, err = drivers.ConfigString(b, "type")
	if err != nil {
		errs = append(errs, fmt.Errorf("logging: %w", err))
	}
	lc.Config, err = scalarMap(b, "config")
	if err != nil {
		errs = append(errs, fmt.Errorf("logging: %w", err))
	}
	switch {
	case lc.Type == "none":
		errs = append(errs, &drivers.FieldError{Field: "logging.type", Rule: "\"none\" leaves nothing for alloc logs; to discard the output, set logs { disabled = true } in the task"})
	case lc.Type != "" && !slices.Contains(readableLogDrivers, lc.Type) && lc.Config["cache-disabled"] == "true":
		errs = append(errs, &drivers.FieldError{Field: "logging.config.cache-disabled",
			Rule: fmt.Sprintf("= \"true\" leaves the output of log driver %q unreadable for alloc logs and log rotation (Drover reads it through the engine's log API)", lc.Type)})
	}
	return lc, errors.Join(errs...)
}

// parseUlimit parses one ulimit entry: "soft" or "soft:hard" (-1 is
// unlimited); the hard limit must not be below the soft one.
func parseUlimit(name, value string) (ulimitSpec, error) {
	if !slices.Contains(ulimitNames, name) {
		return ulimitSpec{}, fmt.Errorf("is not a ulimit Docker knows (%s)", strings.Join(ulimitNames, ", "))
	}
	softS, hardS, hasHard := strings.Cut(strings.TrimSpace(value), ":")
	soft, err := strconv.ParseInt(softS, 10, 64)
	if err != nil || soft < -1 {
		return ulimitSpec{}, fmt.Errorf("must be \"soft\" or \"soft:hard\" with whole numbers, got %q", value)
	}
	hard := soft
	if hasHard {
		hard, err = strconv.ParseInt(hardS, 10, 64)
		if err != nil || hard < -1 {
			return ulimitSpec{}, fmt.Errorf("must be \"soft\" or \"soft:hard\" with whole numbers, got %q", value)
		}
	}
	if hard != -1 && (soft == -1 || soft > hard) {
		return ulimitSpec{}, fmt.Errorf("soft limit must not exceed the hard limit, got %q", value)
	}
	return ulimitSpec{Name: name, Soft: soft, Hard: hard}, nil
}

// intMap returns config[key] as a map of integers: a map, or a list of
// maps (HCL block syntax), merged in order.
func intMap(m map[string]any, key string) (map[string]int, error) {
	blocks, err := blockList(m, key)
	if err != nil {
		return nil, &drivers.FieldError{Field: key, Rule: fmt.Sprintf("must be a map of numbers, got %T", m[key])}
	}
	if len(blocks) == 0 {
		return nil, nil
	}
	out := map[string]int{}
	var errs []error
	for _, b := range blocks {
		for _, k := range sortedKeys(b) {
			n, _, err := drivers.ConfigInt(b, k)
			if err != nil {
				errs = append(errs, &drivers.FieldError{Field: key + "." + k, Rule: fmt.Sprintf("must be an integer, got %T %v", b[k], b[k])})
				continue
			}
			out[k] = n
		}
	}
	return out, errors.Join(errs...)
}

// scalarMap is stringMap that also takes numbers and bools, rendered as
// strings: HCL turns them into the strings these map(string) keys want.
func scalarMap(m map[string]any, key string) (map[string]string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	if _, isStrings := v.(map[string]string); isStrings {
		return stringMap(m, key)
	}
	blocks, err := blockList(m, key)
	if err != nil {
		return nil, &drivers.FieldError{Field: key, Rule: fmt.Sprintf("must be a map of strings, got %T", v)}
	}
	conv := make([]any, 0, len(blocks))
	for _, b := range blocks {
		c := make(map[string]any, len(b))
		for k, x := range b {
			switch t := x.(type) {
			case bool:
				c[k] = strconv.FormatBool(t)
			case string:
				c[k] = t
			default:
				if n, _, err := drivers.ConfigInt(b, k); err == nil {
					c[k] = strconv.Itoa(n)
				} else {
					c[k] = x // stringMap names it
				}
			}
		}
		conv = append(conv, c)
	}
	return stringMap(map[string]any{key: conv}, key)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// validCPUList reports whether s is a Linux CPU list: comma-separated CPU
// numbers and ranges "a-b" with a <= b.
func validCPUList(s string) bool {
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return false
		}
		if isRange {
			b, err := strconv.Atoi(hi)
			if err != nil || b < a {
				return false
			}
		}
	}
	return true
}
