package docker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/mount"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
)

func TestSecurityPluginOptions(t *testing.T) {
	pc, err := parsePluginConfig(map[string]any{})
	require.NoError(t, err)
	so := pc.Security
	require.False(t, so.VolumesEnabled)
	require.False(t, so.AllowPrivileged)
	require.False(t, so.AllowDevices)
	require.Equal(t, []string{"audit_write", "chown", "dac_override", "fowner", "fsetid", "kill", "mknod",
		"net_bind_service", "setfcap", "setgid", "setpcap", "setuid", "sys_chroot"}, so.AllowCaps)
	require.Equal(t, []string{"runc", "nvidia"}, so.AllowRuntimes)
	for _, kind := range []string{"pid", "ipc", "uts", "userns"} {
		require.Equal(t, []string{"private"}, so.AllowedModes[kind], kind)
	}
	require.Equal(t, []string{"default", "bridge", "host", "none"}, so.AllowedModes["network"])

	pc, err = parsePluginConfig(map[string]any{
		"volumes":          map[string]any{"enabled": true, "selinuxlabel": "z"},
		"allow_privileged": true,
		"allow_devices":    true,
		"allow_caps":       []any{"CAP_NET_ADMIN", "chown"},
		"allow_runtimes":   []any{"runsc"},
		"allowed_modes":    []any{map[string]any{"pid": []any{"private", "host"}}},
	})
	require.NoError(t, err)
	so = pc.Security
	require.True(t, so.VolumesEnabled)
	require.Equal(t, "z", so.SELinuxLabel)
	require.True(t, so.AllowPrivileged)
	require.True(t, so.AllowDevices)
	require.Equal(t, []string{"net_admin", "chown"}, so.AllowCaps)
	require.Equal(t, []string{"runsc"}, so.AllowRuntimes)
	require.Equal(t, []string{"private", "host"}, so.AllowedModes["pid"])
	require.Equal(t, []string{"private"}, so.AllowedModes["ipc"], "modes not given keep their default")
	require.Equal(t, []string{"audit_write", "chown"}, DefaultAllowCaps[:2], "the defaults are not modified by a parse")

	_, err = parsePluginConfig(map[string]any{
		"volumes":          map[string]any{"enabled": "maybe", "selinuxlabel": "q", "extra": 1},
		"allow_privileged": "yes",
		"allowed_modes":    map[string]any{"pid": "host", "net": []any{}},
	})
	for _, want := range []string{"volumes: enabled must be a bool", "volumes.selinuxlabel must be \"z\" or \"Z\"",
		"volumes: extra is not a known option", "allow_privileged must be a bool", "allowed_modes: pid must be a list",
		"allowed_modes: net is not a known option"} {
		require.ErrorContains(t, err, want)
	}
}

func TestParseSecurityConfig(t *testing.T) {
	tc, err := parseTaskConfig(map[string]any{
		"image": "web", "privileged": true, "cap_add": []any{"SYS_ADMIN"}, "cap_drop": []any{"chown"},
		"pid_mode": "host", "ipc_mode": "host", "uts_mode": "host", "userns_mode": "host",
		"devices":      []any{map[string]any{"host_path": "/dev/fuse"}, map[string]any{"host_path": "/dev/null", "container_path": "/dev/x", "cgroup_permissions": "r"}},
		"security_opt": []any{"no-new-privileges"}, "runtime": "runsc",
	}, defaultPluginConfig())
	require.NoError(t, err)
	sc := tc.Security
	require.True(t, sc.Privileged)
	require.Equal(t, []string{"SYS_ADMIN"}, sc.CapAdd)
	require.Equal(t, []string{"chown"}, sc.CapDrop)
	require.Equal(t, []string{"host", "host", "host", "host"}, []string{sc.PidMode, sc.IpcMode, sc.UtsMode, sc.UsernsMode})
	require.Equal(t, []deviceSpec{{"/dev/fuse", "/dev/fuse", "rwm"}, {"/dev/null", "/dev/x", "r"}}, sc.Devices)
	require.Equal(t, "runsc", sc.Runtime)

	_, err = parseTaskConfig(map[string]any{
		"image": "web", "privileged": "very", "cap_add": []any{"a b"}, "pid_mode": 1,
		"devices": []any{map[string]any{"host_path": "rel", "container_path": "rel", "cgroup_permissions": "rwx", "x": 1}},
	}, defaultPluginConfig())
	for _, want := range []string{"privileged must be a bool", "cap_add[0] must be a capability name", "pid_mode must be a string",
		"devices[0].host_path is required and must be an absolute path", "devices[0].container_path must be an absolute path",
		"devices[0].cgroup_permissions must be made of r, w and m", "devices[0]: x is not a known option"} {
		require.ErrorContains(t, err, want)
	}
}

// TestCheckPolicy: each setting beyond the defaults is refused with the
// field, the value and the option that allows it, and allowed by that
// option.
func TestCheckPolicy(t *testing.T) {
	const pre = `: set plugin "docker" { config { `
	cases := []struct {
		name   string
		config map[string]any
		want   string
		allow  func(*securityOptions)
	}{
		{"privileged", map[string]any{"privileged": true},
			`privileged = true: privileged containers are not allowed on this client` + pre + `allow_privileged = true } }`,
			func(so *securityOptions) { so.AllowPrivileged = true }},
		{"cap_add", map[string]any{"cap_add": []any{"chown", "SYS_ADMIN"}},
			`cap_add[1] = "SYS_ADMIN": capability "sys_admin" is not in allow_caps on this client` + pre +
				`allow_caps = ["audit_write", "chown", "dac_override", "fowner", "fsetid", "kill", "mknod", "net_bind_service", "setfcap", "setgid", "setpcap", "setuid", "sys_chroot", "sys_admin"] } }`,
			func(so *securityOptions) { so.AllowCaps = append(so.AllowCaps, "sys_admin") }},
		{"cap_add all", map[string]any{"cap_add": []any{"ALL"}},
			`cap_add[0] = "ALL": capability "all" is not in allow_caps on this client`,
			func(so *securityOptions) { so.AllowCaps = []string{"all"} }},
		{"pid_mode", map[string]any{"pid_mode": "host"},
			`pid_mode = "host": pid mode "host" is not in allowed_modes on this client` + pre + `allowed_modes { pid = ["private", "host"] } } }`,
			func(so *securityOptions) { so.AllowedModes["pid"] = []string{"private", "host"} }},
		{"ipc_mode", map[string]any{"ipc_mode": "host"},
			`ipc_mode = "host": ipc mode "host" is not in allowed_modes on this client` + pre + `allowed_modes { ipc = ["private", "host"] } } }`,
			func(so *securityOptions) { so.AllowedModes["ipc"] = []string{"private", "host"} }},
		{"uts_mode", map[string]any{"uts_mode": "host"},
			`uts_mode = "host": uts mode "host" is not in allowed_modes on this client` + pre + `allowed_modes { uts = ["private", "host"] } } }`,
			func(so *securityOptions) { so.AllowedModes["uts"] = []string{"private", "host"} }},
		{"userns_mode", map[string]any{"userns_mode": "host"},
			`userns_mode = "host": userns mode "host" is not in allowed_modes on this client` + pre + `allowed_modes { userns = ["private", "host"] } } }`,
			func(so *securityOptions) { so.AllowedModes["userns"] = []string{"private", "host"} }},
		{"pid_mode of another container", map[string]any{"pid_mode": "container:db"},
			`pid_mode = "container:db": pid mode "container" is not in allowed_modes`,
			func(so *securityOptions) { so.AllowedModes["pid"] = []string{"container"} }},
		{"network_mode of another container", map[string]any{"network_mode": "container:db"},
			`network_mode = "container:db": network mode "container" is not in allowed_modes on this client` + pre +
				`allowed_modes { network = ["default", "bridge", "host", "none", "container"] } } }`,
			func(so *securityOptions) {
				so.AllowedModes["network"] = append(so.AllowedModes["network"], "container")
			}},
		{"runtime", map[string]any{"runtime": "runsc"},
			`runtime = "runsc": runtime "runsc" is not in allow_runtimes on this client` + pre + `allow_runtimes = ["runc", "nvidia", "runsc"] } }`,
			func(so *securityOptions) { so.AllowRuntimes = append(so.AllowRuntimes, "runsc") }},
		{"devices", map[string]any{"devices": []any{map[string]any{"host_path": "/dev/sda"}}},
			`devices[0].host_path = "/dev/sda": host devices are not allowed on this client` + pre + `allow_devices = true } }`,
			func(so *securityOptions) { so.AllowDevices = true }},
		{"security_opt", map[string]any{"security_opt": []any{"no-new-privileges", "seccomp=unconfined"}},
			`security_opt[1] = "seccomp=unconfined": security options other than no-new-privileges need privileged containers, which are not allowed on this client` + pre + `allow_privileged = true } }`,
			func(so *securityOptions) { so.AllowPrivileged = true }},
		{"named volume", map[string]any{"volumes": []any{"data:/data"}},
			`volumes[0] = "data:/data": named volume "data" needs volumes, and volumes are disabled on this client` + pre + `volumes { enabled = true } } }`,
			func(so *securityOptions) { so.VolumesEnabled = true }},
		{"named volume mount", map[string]any{"mount": []any{map[string]any{"type": "volume", "source": "data", "target": "/data"}}},
			`mount[0].source = "data": named volume "data" needs volumes, and volumes are disabled on this client` + pre + `volumes { enabled = true } } }`,
			func(so *securityOptions) { so.VolumesEnabled = true }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := map[string]any{"image": "web"}
			for k, v := range c.config {
				m[k] = v
			}
			tc, err := parseTaskConfig(m, defaultPluginConfig())
			require.NoError(t, err)
			so := defaultSecurityOptions()
			err = checkPolicy(tc, so)
			require.ErrorContains(t, err, c.want)
			var pe *PolicyError
			require.ErrorAs(t, err, &pe)
			c.allow(&so)
			require.NoError(t, checkPolicy(tc, so))
		})
	}

	// What the defaults allow.
	tc, err := parseTaskConfig(map[string]any{"image": "web", "network_mode": "host", "cap_add": []any{"CAP_CHOWN"},
		"cap_drop": []any{"all"}, "runtime": "runc", "security_opt": []any{"no-new-privileges:true"}, "pid_mode": "", "ipc_mode": "private"},
		defaultPluginConfig())
	require.NoError(t, err)
	require.NoError(t, checkPolicy(tc, defaultSecurityOptions()))
}

func TestCapDrop(t *testing.T) {
	so := defaultSecurityOptions()
	require.Equal(t, []string{"net_raw"}, capDrop(securityConfig{}, so), "Docker's net_raw is not in allow_caps")
	require.Equal(t, []string{"chown", "net_raw"}, capDrop(securityConfig{CapDrop: []string{"chown"}}, so))
	require.Empty(t, capDrop(securityConfig{CapAdd: []string{"NET_RAW"}}, so), "asked for (and allowed, elsewhere)")
	require.Equal(t, []string{"ALL"}, capDrop(securityConfig{CapDrop: []string{"ALL"}}, so))
	so.AllowCaps = []string{"chown"}
	got := capDrop(securityConfig{}, so)
	require.Len(t, got, len(dockerDefaultCaps)-1)
	require.NotContains(t, got, "chown")
	so.AllowCaps = []string{"all"}
	require.Empty(t, capDrop(securityConfig{}, so))
}

// allocTree builds <root>/<alloc>/{alloc/data,web/local,web/secrets} and a
// host directory outside it, as the client lays out an allocation.
func allocTree(t *testing.T) (cfg *drivers.TaskConfig, outside string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	allocDir := filepath.Join(base, "a1")
	for _, d := range []string{"alloc/data", "web/local", "web/secrets"} {
		require.NoError(t, os.MkdirAll(filepath.Join(allocDir, d), 0o755))
	}
	outside = filepath.Join(base, "host")
	require.NoError(t, os.MkdirAll(outside, 0o755))
	return &drivers.TaskConfig{ID: "a1/web", AllocID: "a1", TaskName: "web",
		AllocDir: filepath.Join(allocDir, "alloc"), TaskDir: filepath.Join(allocDir, "web")}, outside
}

func TestTaskMountsConfinedToTheAllocDir(t *testing.T) {
	cfg, outside := allocTree(t)
	data := filepath.Join(cfg.AllocDir, "data")
	require.NoError(t, os.Symlink("/", filepath.Join(data, "root")))
	require.NoError(t, os.Symlink(outside, filepath.Join(data, "host")))
	require.NoError(t, os.Symlink("../../web/local", filepath.Join(data, "in")))
	so := defaultSecurityOptions()

	spec := func(config map[string]any) ([]mount.Mount, error) {
		config["image"] = "web"
		tc, err := parseTaskConfig(config, defaultPluginConfig())
		require.NoError(t, err)
		_, hc, err := containerSpec(cfg, tc, so, "web")
		if err != nil {
			return nil, err
		}
		return hc.Mounts, nil
	}

	// Inside: relative to the task dir, through ../alloc, a link that
	// stays inside (Docker gets the resolved path), and the alloc dir
	// named by its absolute path.
	mounts, err := spec(map[string]any{
		"volumes": []any{"./local:/l", "../alloc/data:/d:ro", "../alloc/data/in:/in"},
		"mount":   []any{map[string]any{"type": "bind", "source": cfg.AllocDir, "target": "/a"}},
	})
	require.NoError(t, err)
	require.Equal(t, []mount.Mount{
		{Type: mount.TypeBind, Source: filepath.Join(cfg.TaskDir, "local"), Target: "/l"},
		{Type: mount.TypeBind, Source: data, Target: "/d", ReadOnly: true},
		{Type: mount.TypeBind, Source: filepath.Join(cfg.TaskDir, "local"), Target: "/in"},
		{Type: mount.TypeBind, Source: cfg.AllocDir, Target: "/a"},
	}, mounts[3:])

	refused := []struct {
		name   string
		config map[string]any
		want   string
	}{
		{"host root", map[string]any{"volumes": []any{"/:/hostroot"}},
			`volumes[0] = "/:/hostroot": / is outside the allocation directory, and volumes are disabled on this client: set plugin "docker" { config { volumes { enabled = true } } }`},
		{"relative escape", map[string]any{"volumes": []any{"../../../../../../etc:/up"}},
			`volumes[0] = "../../../../../../etc:/up": /etc is outside the allocation directory, and volumes are disabled on this client`},
		{"mount block", map[string]any{"mount": []any{map[string]any{"type": "bind", "source": outside, "target": "/h"}}},
			`mount[0].source = "` + outside + `": ` + outside + ` is outside the allocation directory, and volumes are disabled`},
		{"planted link to /", map[string]any{"volumes": []any{"../alloc/data/root:/hostroot"}},
			`volumes[0] = "../alloc/data/root:/hostroot": ` + cfg.TaskDir + `/../alloc/data/root resolves to /, outside the allocation directory, and volumes are disabled`},
		{"below a planted link", map[string]any{"mount": []any{map[string]any{"type": "bind", "source": "../alloc/data/host/x", "target": "/x"}}},
			`resolves to ` + filepath.Join(outside, "x") + `, outside the allocation directory`},
		{"link then ..", map[string]any{"volumes": []any{"../alloc/data/in/../../../..:/up"}},
			cfg.TaskDir + `/../alloc/data/in/../../../.. resolves to ` + filepath.Dir(filepath.Dir(filepath.Dir(cfg.AllocDir))) + `, outside`},
		{"prefix sibling", map[string]any{"volumes": []any{filepath.Dir(cfg.AllocDir) + "-x:/x"}},
			`is outside the allocation directory`},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			_, err := spec(c.config)
			require.ErrorContains(t, err, c.want)
			var pe *PolicyError
			require.ErrorAs(t, err, &pe)
			require.False(t, drivers.IsRecoverable(err))
		})
	}

	// A source that does not exist yet: fine at prepare, recoverable at
	// start (a sibling may create it), refused once it is planted as a link.
	tc, err := parseTaskConfig(map[string]any{"image": "web", "volumes": []any{"../alloc/data/later:/l"}}, defaultPluginConfig())
	require.NoError(t, err)
	require.NoError(t, checkBinds(cfg, tc, so))
	_, err = spec(map[string]any{"volumes": []any{"../alloc/data/later:/l"}})
	require.ErrorContains(t, err, "bind source "+filepath.Join(data, "later")+" does not exist")
	require.True(t, drivers.IsRecoverable(err))
	require.NoError(t, os.Symlink("/etc", filepath.Join(data, "later")))
	require.ErrorContains(t, checkBinds(cfg, tc, so), "resolves to /etc, outside the allocation directory")

	// Opted in: the path is Docker's to follow, as written.
	so.VolumesEnabled = true
	mounts, err = spec(map[string]any{"volumes": []any{"/:/hostroot", "../alloc/data/root:/r"}})
	require.NoError(t, err)
	require.Equal(t, "/", mounts[3].Source)
	require.Equal(t, filepath.Join(data, "root"), mounts[4].Source)
}

func TestSELinuxLabelBinds(t *testing.T) {
	cfg, _ := allocTree(t)
	so := defaultSecurityOptions()
	so.SELinuxLabel = "Z"
	tc, err := parseTaskConfig(map[string]any{"image": "web", "volumes": []any{"./local:/l:ro"},
		"mount": []any{map[string]any{"type": "bind", "source": "local", "target": "/m"}}}, defaultPluginConfig())
	require.NoError(t, err)
	_, hc, err := containerSpec(cfg, tc, so, "web")
	require.NoError(t, err)
	local := filepath.Join(cfg.TaskDir, "local")
	require.Equal(t, []string{
		cfg.AllocDir + ":/alloc:rw,Z", local + ":/local:rw,Z", filepath.Join(cfg.TaskDir, "secrets") + ":/secrets:rw,Z",
		local + ":/l:ro,Z",
	}, hc.Binds)
	require.Equal(t, []mount.Mount{{Type: mount.TypeBind, Source: local, Target: "/m"}}, hc.Mounts, "mount blocks are not relabelled")
}

func TestContainerSpecSecurity(t *testing.T) {
	cfg, _ := allocTree(t)
	tc, err := parseTaskConfig(map[string]any{
		"image": "web", "privileged": true, "cap_add": []any{"sys_admin"}, "cap_drop": []any{"mknod"},
		"pid_mode": "host", "ipc_mode": "host", "uts_mode": "host", "userns_mode": "host",
		"devices":      []any{map[string]any{"host_path": "/dev/null", "container_path": "/dev/n2"}},
		"security_opt": []any{"seccomp=unconfined"}, "runtime": "runsc",
	}, defaultPluginConfig())
	require.NoError(t, err)
	_, _, err = containerSpec(cfg, tc, defaultSecurityOptions(), "web")
	var pe *PolicyError
	require.ErrorAs(t, err, &pe)
	require.Len(t, strings.Split(err.Error(), "\n"), 9, "every refused setting is listed: %v", err)

	so := defaultSecurityOptions()
	so.AllowPrivileged, so.AllowDevices = true, true
	so.AllowCaps = append(so.AllowCaps, "sys_admin")
	for _, k := range []string{"pid", "ipc", "uts", "userns"} {
		so.AllowedModes[k] = []string{"host"}
	}
	so.AllowRuntimes = []string{"runsc"}
	_, hc, err := containerSpec(cfg, tc, so, "web")
	require.NoError(t, err)
	require.True(t, hc.Privileged)
	require.Equal(t, []string{"sys_admin"}, []string(hc.CapAdd))
	require.Equal(t, []string{"mknod"}, []string(hc.CapDrop), "privileged: nothing more to drop")
	require.True(t, hc.PidMode.IsHost())
	require.True(t, hc.IpcMode.IsHost())
	require.True(t, hc.UTSMode.IsHost())
	require.True(t, hc.UsernsMode.IsHost())
	require.Equal(t, "runsc", hc.Runtime)
	require.Equal(t, []string{"seccomp=unconfined"}, hc.SecurityOpt)
	require.Len(t, hc.Devices, 1)
	require.Equal(t, "/dev/n2", hc.Devices[0].PathInContainer)
	require.Equal(t, "rwm", hc.Devices[0].CgroupPermissions)
}
