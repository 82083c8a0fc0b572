package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/helper/sockaddrtmpl"
)

// LogLevels are the accepted values of log_level (case-insensitive).
var LogLevels = []string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR"}

// Validate checks a complete configuration (defaults applied) and returns
// every problem found, joined; each message starts with the field's name as
// written in the configuration file, e.g. "server.bootstrap_expect: ...".
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}

	if !c.Server.Enabled && !c.Client.Enabled {
		bad("server.enabled, client.enabled", "neither server nor client is enabled; enable at least one (or use -dev)")
	}
	if c.Name == "" {
		bad("name", "must not be empty")
	}
	if c.Datacenter == "" {
		bad("datacenter", "must not be empty")
	}
	if c.Region == "" {
		bad("region", "must not be empty")
	}
	if c.DataDir == "" && !c.DevMode {
		bad("data_dir", "must be set unless in -dev mode")
	}
	if !validLogLevel(c.LogLevel) {
		bad("log_level", "unknown level %q; use one of %s", c.LogLevel, strings.Join(LogLevels, ", "))
	}
	if net.ParseIP(c.BindAddr) == nil {
		bad("bind_addr", "%q is not an IP address", c.BindAddr)
	}

	httpOK := checkPort(bad, "ports.http", c.Ports.HTTP)
	rpcOK := checkPort(bad, "ports.rpc", c.Ports.RPC)
	if httpOK && rpcOK && c.Ports.HTTP == c.Ports.RPC {
		bad("ports.rpc", "must differ from ports.http (both are %d)", c.Ports.HTTP)
	}
	if c.Ports.Serf != 0 && checkPort(bad, "ports.serf", c.Ports.Serf) &&
		(c.Ports.Serf == c.Ports.HTTP || c.Ports.Serf == c.Ports.RPC) {
		bad("ports.serf", "must differ from ports.http and ports.rpc (%d)", c.Ports.Serf)
	}
	for _, f := range [][2]string{{"advertise.http", c.Advertise.HTTP}, {"advertise.rpc", c.Advertise.RPC}} {
		field, a := f[0], f[1]
		if sockaddrtmpl.IsTemplate(a) { // LoadFromArgs resolves them first (ResolveAddrTemplates)
			bad(field, "go-sockaddr template %q is not resolved", a)
			continue
		}
		checkAddr(bad, field, a, true)
	}

	if c.Server.BootstrapExpect < 0 {
		bad("server.bootstrap_expect", "must be 0 or more, got %d", c.Server.BootstrapExpect)
	}
	if c.DevMode && c.Server.BootstrapExpect > 1 {
		bad("server.bootstrap_expect", "must be at most 1 in -dev mode, got %d", c.Server.BootstrapExpect)
	}
	if p := c.Server.ImagePinning; p != "" && p != ImagePinningOn && p != ImagePinningOff { // "": the default, on
		bad("server.image_pinning", "must be %q or %q, got %q", ImagePinningOn, ImagePinningOff, p)
	}
	if a := c.Server.PrometheusAddress; a != "" {
		if u, err := url.Parse(a); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("server.prometheus_address", "%q is not an http:// or https:// URL", a)
		}
	}
	for i, a := range c.Server.RetryJoin {
		checkAddr(bad, fmt.Sprintf("server.server_join.retry_join[%d]", i), a, false)
	}

	ci := c.Server.ClientIntroduction
	if ci.Enforcement != "" && !slices.Contains(IntroductionEnforcements, ci.Enforcement) {
		bad("server.client_introduction.enforcement", "unknown value %q; use one of %s", ci.Enforcement, strings.Join(IntroductionEnforcements, ", "))
	}
	if ci.DefaultIdentityTTL < 0 {
		bad("server.client_introduction.default_identity_ttl", "must not be negative, got %s", ci.DefaultIdentityTTL)
	}
	if ci.MaxRequestIdentityTTL < 0 {
		bad("server.client_introduction.max_request_identity_ttl", "must not be negative, got %s", ci.MaxRequestIdentityTTL)
	}
	if def, maxTTL := orDuration(ci.DefaultIdentityTTL, 5*time.Minute), orDuration(ci.MaxRequestIdentityTTL, 30*time.Minute); def > maxTTL {
		bad("server.client_introduction.default_identity_ttl", "%s exceeds max_request_identity_ttl (%s)", def, maxTTL)
	}

	if c.Client.Enabled && !c.Server.Enabled && len(c.Client.Servers) == 0 {
		bad("client.servers", "a client needs at least one server address when this agent is not a server")
	}
	for i, a := range c.Client.Servers {
		checkAddr(bad, fmt.Sprintf("client.servers[%d]", i), a, false)
	}
	validateHostVolumes(bad, c.Client.HostVolumes)
	validateHostNetworks(bad, c.Client.HostNetworks)
	if lo, hi := c.Client.MinDynamicPort, c.Client.MaxDynamicPort; lo != 0 || hi != 0 {
		if lo < 1 || lo > 65535 {
			bad("client.min_dynamic_port", "must be between 1 and 65535, got %d", lo)
		}
		if hi < 1 || hi > 65535 {
			bad("client.max_dynamic_port", "must be between 1 and 65535, got %d", hi)
		}
		if lo > hi {
			bad("client.max_dynamic_port", "must not be below client.min_dynamic_port (%d), got %d", lo, hi)
		}
	}
	switch c.Client.NodePool {
	case "":
		bad("client.node_pool", "must not be empty")
	case "all":
		bad("client.node_pool", `"all" is reserved and cannot be a node's pool`)
	}
	c.validateTLS(bad)
	for name, p := range c.Plugins {
		if name == "" {
			bad("plugin", "a plugin block needs a name")
		}
		if v, ok := p.Config["enabled"]; ok {
			if _, isBool := v.(bool); !isBool {
				bad(fmt.Sprintf("plugin.%s.config.enabled", name), "must be a bool, got %T", v)
			}
		}
	}
	return errors.Join(errs...)
}

func validLogLevel(l string) bool {
	for _, v := range LogLevels {
		if strings.EqualFold(l, v) {
			return true
		}
	}
	return false
}

func checkPort(bad func(string, string, ...any), field string, p int) bool {
	if p < 1 || p > 65535 {
		bad(field, "port %d is out of range (1-65535)", p)
		return false
	}
	return true
}

// checkAddr accepts "host" or "host:port" (IPv6 hosts with a port in
// brackets). Empty is accepted when optional.
func checkAddr(bad func(string, string, ...any), field, addr string, optional bool) {
	if addr == "" {
		if !optional {
			bad(field, "must not be empty")
		}
		return
	}
	if strings.Contains(addr, "://") {
		bad(field, "%q: give host or host:port, without a scheme", addr)
		return
	}
	host, port, err := net.SplitHostPort(addr)
	switch {
	case err == nil && port == "":
		bad(field, "%q: missing port after ':'", addr)
		return
	case err == nil:
	case strings.Count(addr, ":") == 1: // host:port with a bad shape
		bad(field, "%q: %v", addr, err)
		return
	default: // a bare host, possibly IPv6
		host, port = strings.Trim(addr, "[]"), ""
	}
	if host == "" {
		bad(field, "%q has no host", addr)
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			bad(field, "%q: port %q is out of range (1-65535)", addr, port)
		}
	}
}

func orDuration(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
