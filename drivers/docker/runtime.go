package docker

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"

	"github.com/drover-project/drover/drivers"
)

// applyContainerKeys passes the container keys of tc (see keys.go) and the
// task's resources to the create request.
func applyContainerKeys(cfg *drivers.TaskConfig, k containerKeys, cc *container.Config, hc *container.HostConfig) error {
	cc.Hostname = k.Hostname
	cc.Tty = k.TTY
	cc.OpenStdin = k.Interactive
	if k.HealthcheckDisable {
		cc.Healthcheck = &container.HealthConfig{Test: []string{"NONE"}}
	}
	hc.DNS = k.DNSServers
	hc.DNSSearch = k.DNSSearchDomains
	hc.DNSOptions = k.DNSOptions
	hc.ExtraHosts = k.ExtraHosts
	hc.GroupAdd = k.GroupAdd
	hc.Sysctls = k.Sysctl
	hc.StorageOpt = k.StorageOpt
	hc.ShmSize = k.ShmSize
	hc.ReadonlyRootfs = k.ReadonlyRootfs
	hc.OomScoreAdj = k.OOMScoreAdj
	cc.MacAddress = k.MacAddress //nolint:staticcheck // the engine's API (1.41) still takes it here
	hc.CgroupnsMode = container.CgroupnsMode(k.CgroupNS)
	hc.CpusetCpus = k.CpusetCPUs
	if k.Init {
		init := true
		hc.Init = &init
	}
	if k.PidsLimit > 0 {
		n := k.PidsLimit
		hc.PidsLimit = &n
	}
	for _, u := range k.Ulimits {
		hc.Ulimits = append(hc.Ulimits, &container.Ulimit{Name: u.Name, Soft: u.Soft, Hard: u.Hard})
	}
	hc.LogConfig = logConfig(k.Logging)

	memory, reservation, err := memoryLimits(cfg.MemoryMB, cfg.MemoryMaxMB, k.MemoryHardLimitMB)
	if err != nil {
		return drivers.NewRecoverableError(err, false)
	}
	hc.Memory, hc.MemoryReservation = memory, reservation
	if cfg.CPU > 0 {
		hc.CPUShares = int64(max(cfg.CPU, 2)) // docker's least share is 2
		if k.CPUHardLimit {
			hc.CPUPeriod, hc.CPUQuota = cpuQuota(cfg.CPU, coreMHz(), k.CPUCFSPeriod)
		}
	}
	return nil
}

// defaultLogConfig is Nomad's log driver for a task without a logging
// block: json-file holding at most two files of 2 MB, so the engine's
// copy of the output (the driver copies it to the task's own rotated
// files) stays small.
func defaultLogConfig() container.LogConfig {
	return container.LogConfig{Type: "json-file", Config: map[string]string{"max-file": "2", "max-size": "2m"}}
}

// logConfig is the container's log driver: the task's logging block, or
// defaultLogConfig without one (or with an empty one).
func logConfig(l *loggingConfig) container.LogConfig {
	if l == nil || (l.Type == "" && len(l.Config) == 0) {
		return defaultLogConfig()
	}
	return container.LogConfig{Type: l.Type, Config: l.Config}
}

// memoryLimits returns the container's memory limit and reservation in
// bytes, as Nomad sets them: with no hard limit (memory_hard_limit, else
// the task's memory_max) the limit is the task's memory; with one, the
// limit is the hard limit and the task's memory the reservation (a soft
// limit the kernel enforces under memory pressure). A hard limit below
// the task's memory is an error.
func memoryLimits(memoryMB, memoryMaxMB, hardLimitMB int) (limit, reservation int64, err error) {
	hard := memoryMaxMB
	if hardLimitMB > 0 {
		hard = hardLimitMB
	}
	if hard <= 0 || memoryMB <= 0 {
		if memoryMB <= 0 && hard > 0 {
			return int64(hard) << 20, 0, nil
		}
		return int64(max(memoryMB, 0)) << 20, 0, nil
	}
	if hard < memoryMB {
		return 0, 0, &drivers.FieldError{Field: "memory_hard_limit", Rule: fmt.Sprintf("(%d MB) must not be less than the task's memory (%d MB)", hard, memoryMB)}
	}
	if hard == memoryMB {
		return int64(hard) << 20, 0, nil
	}
	return int64(hard) << 20, int64(memoryMB) << 20, nil
}

// DefaultCFSPeriod is Docker's CFS period in microseconds.
const DefaultCFSPeriod = 100000

// cpuQuota returns the CFS period and quota (microseconds) that hold a
// task to its CPU share, as Nomad's cpu_hard_limit does: the task gets
// cpuMHz / coreMHz cores' worth of each period (at least 1ms, Docker's
// least quota).
func cpuQuota(cpuMHz int, coreMHz float64, period int) (int64, int64) {
	if period <= 0 {
		period = DefaultCFSPeriod
	}
	if coreMHz <= 0 {
		coreMHz = defaultCoreMHz
	}
	quota := int64(float64(cpuMHz) / coreMHz * float64(period))
	return int64(period), max(quota, 1000)
}

// defaultCoreMHz is the frequency assumed for a core that reports none
// (as the client's fingerprint assumes).
const defaultCoreMHz = 1000

// coreMHz is the node's mean core frequency from /proc/cpuinfo, the unit
// the client's fingerprint measures CPU in; a variable so tests may fix it.
var coreMHz = func() float64 {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return defaultCoreMHz
	}
	return meanCoreMHz(string(b))
}

// meanCoreMHz averages the "cpu MHz" lines of a cpuinfo text; the default
// when there is none.
func meanCoreMHz(cpuinfo string) float64 {
	var sum float64
	n := 0
	for _, line := range strings.Split(cpuinfo, "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(key) != "cpu MHz" {
			continue
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil && f > 0 {
			sum += f
			n++
		}
	}
	if n == 0 {
		return defaultCoreMHz
	}
	return sum / float64(n)
}

// publishedPort is one port the container publishes: the host side from
// the task environment, the container side from the port's "to" (ports)
// or from port_map.
type publishedPort struct {
	Field         string // "ports" or "port_map", for errors
	Label         string
	ContainerPort string
}

// publishedPorts lists what ports and port_map publish, in order: the
// labels of ports with their NOMAD_PORT_<label>, then the labels of
// port_map (sorted) that ports does not name. A label in both takes
// port_map's container port, as port_map is written for the container.
func publishedPorts(ports []string, portMap map[string]int, env map[string]string) []publishedPort {
	var out []publishedPort
	seen := map[string]bool{}
	for _, label := range ports {
		cp := env["NOMAD_PORT_"+cleanKey(label)]
		if p, ok := portMap[label]; ok {
			cp = strconv.Itoa(p)
		}
		out = append(out, publishedPort{Field: "ports", Label: label, ContainerPort: cp})
		seen[label] = true
	}
	labels := make([]string, 0, len(portMap))
	for l := range portMap {
		if !seen[l] {
			labels = append(labels, l)
		}
	}
	sort.Strings(labels)
	for _, l := range labels {
		out = append(out, publishedPort{Field: "port_map", Label: l, ContainerPort: strconv.Itoa(portMap[l])})
	}
	return out
}
