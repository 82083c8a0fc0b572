package docker

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/drover-project/drover/drivers"
)

// The operator's security options (plugin "docker" { config { ... } }), with
// Nomad's names and defaults, and the task config keys they govern.

// DefaultAllowCaps is allow_caps' default: Docker's default capabilities
// without net_raw.
var DefaultAllowCaps = []string{
	"audit_write", "chown", "dac_override", "fowner", "fsetid", "kill", "mknod",
	"net_bind_service", "setfcap", "setgid", "setpcap", "setuid", "sys_chroot",
}

// dockerDefaultCaps are the capabilities Docker grants a container that
// asks for none; the driver drops those allow_caps does not list.
var dockerDefaultCaps = append([]string{"net_raw"}, DefaultAllowCaps...)

// DefaultAllowRuntimes is allow_runtimes' default.
var DefaultAllowRuntimes = []string{"runc", "nvidia"}

// Namespace kinds of allowed_modes, each the task key "<kind>_mode".
const (
	modePID     = "pid"
	modeIPC     = "ipc"
	modeUTS     = "uts"
	modeUserNS  = "userns"
	modeNetwork = "network"
)

var modeKinds = []string{modePID, modeIPC, modeUTS, modeUserNS, modeNetwork}

// defaultAllowedModes is allowed_modes' default: private namespaces only,
// and every network mode but joining another container's.
func defaultAllowedModes() map[string][]string {
	return map[string][]string{
		modePID: {"private"}, modeIPC: {"private"}, modeUTS: {"private"}, modeUserNS: {"private"},
		modeNetwork: {"default", "bridge", "host", "none"},
	}
}

// securityOptions is the security part of the plugin config.
type securityOptions struct {
	VolumesEnabled  bool
	SELinuxLabel    string // applied to the driver's binds and volumes entries ("z" or "Z")
	AllowPrivileged bool
	AllowCaps       []string // normalized (lower case, no cap_ prefix); "all" allows any
	AllowedModes    map[string][]string
	AllowRuntimes   []string
	AllowDevices    bool
}

func defaultSecurityOptions() securityOptions {
	return securityOptions{
		AllowCaps:     slices.Clone(DefaultAllowCaps),
		AllowedModes:  defaultAllowedModes(),
		AllowRuntimes: slices.Clone(DefaultAllowRuntimes),
	}
}

var securityPluginFields = []string{"volumes", "allow_privileged", "allow_caps", "allowed_modes", "allow_runtimes", "allow_devices"}

// parseSecurityOptions reads the security options of the plugin block m
// into so.
func parseSecurityOptions(m map[string]any, so *securityOptions) error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	vols, err := blockList(m, "volumes")
	add(err)
	for _, v := range vols {
		if err := drivers.CheckFields(v, "enabled", "selinuxlabel"); err != nil {
			add(fmt.Errorf("volumes: %w", err))
		}
		if b, ok, err := drivers.ConfigBool(v, "enabled"); err != nil {
			add(fmt.Errorf("volumes: %w", err))
		} else if ok {
			so.VolumesEnabled = b
		}
		if s, _, err := drivers.ConfigString(v, "selinuxlabel"); err != nil {
			add(fmt.Errorf("volumes: %w", err))
		} else if s != "" && s != "z" && s != "Z" {
			add(&drivers.FieldError{Field: "volumes.selinuxlabel", Rule: fmt.Sprintf("must be \"z\" or \"Z\", got %q", s)})
		} else {
			so.SELinuxLabel = s
		}
	}
	boolOpt := func(key string, dst *bool) {
		if b, ok, err := drivers.ConfigBool(m, key); err != nil {
			add(err)
		} else if ok {
			*dst = b
		}
	}
	boolOpt("allow_privileged", &so.AllowPrivileged)
	boolOpt("allow_devices", &so.AllowDevices)
	if caps, ok, err := drivers.ConfigStringSlice(m, "allow_caps"); err != nil {
		add(err)
	} else if ok {
		so.AllowCaps = so.AllowCaps[:0]
		for _, c := range caps {
			so.AllowCaps = append(so.AllowCaps, normalizeCap(c))
		}
	}
	if rts, ok, err := drivers.ConfigStringSlice(m, "allow_runtimes"); err != nil {
		add(err)
	} else if ok {
		so.AllowRuntimes = rts
	}
	modes, err := blockList(m, "allowed_modes")
	add(err)
	for _, b := range modes {
		if err := drivers.CheckFields(b, modeKinds...); err != nil {
			add(fmt.Errorf("allowed_modes: %w", err))
		}
		for _, kind := range modeKinds {
			if list, ok, err := drivers.ConfigStringSlice(b, kind); err != nil {
				add(fmt.Errorf("allowed_modes: %w", err))
			} else if ok {
				so.AllowedModes[kind] = list
			}
		}
	}
	return errors.Join(errs...)
}

// normalizeCap turns "CAP_SYS_ADMIN" or "SYS_ADMIN" into "sys_admin".
func normalizeCap(c string) string {
	return strings.TrimPrefix(strings.ToLower(strings.TrimSpace(c)), "cap_")
}

// deviceSpec is one devices entry.
type deviceSpec struct {
	HostPath, ContainerPath, CgroupPermissions string
}

// securityConfig is the security part of a task's config.
type securityConfig struct {
	Privileged                            bool
	CapAdd, CapDrop                       []string // as written
	PidMode, IpcMode, UtsMode, UsernsMode string
	Devices                               []deviceSpec
	SecurityOpt                           []string
	Runtime                               string
}

var securityTaskFields = []string{
	"privileged", "cap_add", "cap_drop", "pid_mode", "ipc_mode", "uts_mode", "userns_mode",
	"devices", "security_opt", "runtime",
}

// parseSecurityConfig reads the security keys of a task's config block.
func parseSecurityConfig(m map[string]any) (securityConfig, error) {
	var sc securityConfig
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	sc.Privileged, _, err = drivers.ConfigBool(m, "privileged")
	add(err)
	sc.CapAdd, _, err = drivers.ConfigStringSlice(m, "cap_add")
	add(err)
	sc.CapDrop, _, err = drivers.ConfigStringSlice(m, "cap_drop")
	add(err)
	for _, key := range []string{"cap_add", "cap_drop"} {
		list, _, _ := drivers.ConfigStringSlice(m, key)
		for i, c := range list {
			if n := normalizeCap(c); n == "" || strings.ContainsAny(n, " \t:=") {
				add(&drivers.FieldError{Field: fmt.Sprintf("%s[%d]", key, i), Rule: fmt.Sprintf("must be a capability name such as \"net_admin\", got %q", c)})
			}
		}
	}
	sc.PidMode, _, err = drivers.ConfigString(m, "pid_mode")
	add(err)
	sc.IpcMode, _, err = drivers.ConfigString(m, "ipc_mode")
	add(err)
	sc.UtsMode, _, err = drivers.ConfigString(m, "uts_mode")
	add(err)
	sc.UsernsMode, _, err = drivers.ConfigString(m, "userns_mode")
	add(err)
	sc.SecurityOpt, _, err = drivers.ConfigStringSlice(m, "security_opt")
	add(err)
	sc.Runtime, _, err = drivers.ConfigString(m, "runtime")
	add(err)

	devs, err := blockList(m, "devices")
	add(err)
	for i, b := range devs {
		field := fmt.Sprintf("devices[%d]", i)
		if err := drivers.CheckFields(b, "host_path", "container_path", "cgroup_permissions"); err != nil {
			add(fmt.Errorf("%s: %w", field, err))
		}
		var d deviceSpec
		var e1, e2, e3 error
		d.HostPath, _, e1 = drivers.ConfigString(b, "host_path")
		d.ContainerPath, _, e2 = drivers.ConfigString(b, "container_path")
		d.CgroupPermissions, _, e3 = drivers.ConfigString(b, "cgroup_permissions")
		for _, e := range []error{e1, e2, e3} {
			if e != nil {
				add(fmt.Errorf("%s: %w", field, e))
			}
		}
		if e1 == nil && !filepath.IsAbs(d.HostPath) {
			add(&drivers.FieldError{Field: field + ".host_path", Rule: "is required and must be an absolute path"})
		}
		if d.ContainerPath == "" {
			d.ContainerPath = d.HostPath
		} else if e2 == nil && !filepath.IsAbs(d.ContainerPath) {
			add(&drivers.FieldError{Field: field + ".container_path", Rule: "must be an absolute path"})
		}
		if d.CgroupPermissions == "" {
			d.CgroupPermissions = "rwm"
		} else if strings.Trim(d.CgroupPermissions, "rwm") != "" {
			add(&drivers.FieldError{Field: field + ".cgroup_permissions", Rule: fmt.Sprintf("must be made of r, w and m, got %q", d.CgroupPermissions)})
		}
		sc.Devices = append(sc.Devices, d)
	}
	return sc, errors.Join(errs...)
}

// PolicyError is a task config value this client's plugin options do not
// allow. Its text names the field, the value, why, and the option that
// would allow it:
//
//	privileged = true: privileged containers are not allowed on this client: set plugin "docker" { config { allow_privileged = true } }
type PolicyError struct {
	Field  string // e.g. "volumes[0]"
	Value  string // rendered as in HCL: "\"host\"", "true"
	Reason string
	Option string // the plugin config body that allows it
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("%s = %s: %s: set plugin \"docker\" { config { %s } }", e.Field, e.Value, e.Reason, e.Option)
}

// hclList renders a list of strings as HCL.
func hclList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

const volumesOption = "volumes { enabled = true }"

// checkPolicy returns a *PolicyError for every security setting of tc the
// options so do not allow, joined; nil when all are allowed. Bind sources
// are checked by guardBinds, which needs the task's directories.
func checkPolicy(tc *taskConfig, so securityOptions) error {
	var errs []error
	deny := func(field, value, reason, option string) {
		errs = append(errs, &PolicyError{Field: field, Value: value, Reason: reason, Option: option})
	}
	sc := tc.Security
	if sc.Privileged && !so.AllowPrivileged {
		deny("privileged", "true", "privileged containers are not allowed on this client", "allow_privileged = true")
	}
	allCaps := slices.Contains(so.AllowCaps, "all")
	for i, c := range sc.CapAdd {
		n := normalizeCap(c)
		if allCaps || (n != "all" && slices.Contains(so.AllowCaps, n)) {
			continue
		}
		deny(fmt.Sprintf("cap_add[%d]", i), fmt.Sprintf("%q", c),
			fmt.Sprintf("capability %q is not in allow_caps on this client", n),
			"allow_caps = "+hclList(append(slices.Clone(so.AllowCaps), n)))
	}
	modes := []struct{ kind, value string }{
		{modePID, sc.PidMode}, {modeIPC, sc.IpcMode}, {modeUTS, sc.UtsMode}, {modeUserNS, sc.UsernsMode},
		{modeNetwork, tc.NetworkMode},
	}
	for _, m := range modes {
		mode := modeName(m.kind, m.value)
		allowed := so.AllowedModes[m.kind]
		if slices.Contains(allowed, mode) {
			continue
		}
		deny(m.kind+"_mode", fmt.Sprintf("%q", m.value),
			fmt.Sprintf("%s mode %q is not in allowed_modes on this client", m.kind, mode),
			fmt.Sprintf("allowed_modes { %s = %s }", m.kind, hclList(append(slices.Clone(allowed), mode))))
	}
	if sc.Runtime != "" && !slices.Contains(so.AllowRuntimes, sc.Runtime) {
		deny("runtime", fmt.Sprintf("%q", sc.Runtime),
			fmt.Sprintf("runtime %q is not in allow_runtimes on this client", sc.Runtime),
			"allow_runtimes = "+hclList(append(slices.Clone(so.AllowRuntimes), sc.Runtime)))
	}
	if !so.AllowDevices {
		for i, d := range sc.Devices {
			deny(fmt.Sprintf("devices[%d].host_path", i), fmt.Sprintf("%q", d.HostPath),
				"host devices are not allowed on this client", "allow_devices = true")
		}
	}
	if !so.AllowPrivileged {
		for i, o := range sc.SecurityOpt {
			if !tighteningSecurityOpt(o) {
				deny(fmt.Sprintf("security_opt[%d]", i), fmt.Sprintf("%q", o),
					"security options other than no-new-privileges need privileged containers, which are not allowed on this client",
					"allow_privileged = true")
			}
		}
	}
	if !so.VolumesEnabled {
		for i, v := range tc.Volumes {
			if v.named() {
				deny(fmt.Sprintf("volumes[%d]", i), fmt.Sprintf("%q", v.Raw),
					fmt.Sprintf("named volume %q needs volumes, and volumes are disabled on this client", v.Source), volumesOption)
			}
		}
		for _, m := range tc.Mounts {
			if m.Type == "volume" {
				deny(m.Field+".source", fmt.Sprintf("%q", m.Source),
					fmt.Sprintf("named volume %q needs volumes, and volumes are disabled on this client", m.Source), volumesOption)
			}
		}
	}
	return errors.Join(errs...)
}

// modeName is the allowed_modes name of a task's mode value: "" is
// "private" ("default" for the network), "container:<id>" is "container".
func modeName(kind, value string) string {
	switch {
	case value == "" && kind == modeNetwork:
		return "default"
	case value == "":
		return "private"
	case strings.HasPrefix(value, "container:"):
		return "container"
	}
	return value
}

// tighteningSecurityOpt reports whether a security_opt entry only removes
// privileges (no-new-privileges), so needs no option.
func tighteningSecurityOpt(o string) bool {
	switch strings.TrimSpace(o) {
	case "no-new-privileges", "no-new-privileges=true", "no-new-privileges:true":
		return true
	}
	return false
}

// capDrop is the container's CapDrop: the task's cap_drop plus, unless
// allow_caps allows all, every Docker default capability that allow_caps
// does not list and cap_add does not ask for (checkPolicy has vetted
// cap_add).
func capDrop(sc securityConfig, so securityOptions) []string {
	out := slices.Clone(sc.CapDrop)
	if slices.Contains(so.AllowCaps, "all") || sc.Privileged {
		return out
	}
	added := map[string]bool{}
	for _, c := range sc.CapAdd {
		added[normalizeCap(c)] = true
	}
	dropped := map[string]bool{}
	for _, c := range sc.CapDrop {
		dropped[normalizeCap(c)] = true
	}
	if dropped["all"] {
		return out
	}
	for _, c := range dockerDefaultCaps {
		if !slices.Contains(so.AllowCaps, c) && !added[c] && !dropped[c] {
			out = append(out, c)
		}
	}
	return out
}
