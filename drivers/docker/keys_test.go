package docker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/go-connections/nat"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
)

func TestParseContainerKeys(t *testing.T) {
	// As the HCL parser and the API send them: blocks are lists of maps,
	// numbers are float64.
	tc, err := parseTaskConfig(map[string]any{
		"image": "redis:7", "auth_soft_fail": true,
		"port_map":           []any{map[string]any{"db": float64(6379)}},
		"hostname":           "cache-1.example",
		"dns_servers":        []any{"10.0.0.2", "fd00::1"},
		"dns_search_domains": []any{"service.consul"},
		"dns_options":        []any{"ndots:2"},
		"extra_hosts":        []any{"db.internal:10.0.0.3", "gw:host-gateway"},
		"logging":            []any{map[string]any{"type": "fluentd", "config": []any{map[string]any{"fluentd-address": "localhost:24224", "max-file": float64(3)}}}},
		"sysctl":             []any{map[string]any{"net.core.somaxconn": float64(16384)}},
		"ulimit":             map[string]any{"nofile": "2048:4096", "nproc": float64(4242)},
		"shm_size":           float64(64 << 20), "init": true, "readonly_rootfs": "true",
		"interactive": true, "tty": true, "load": "local/redis.tar",
		"memory_hard_limit": 256, "cpu_hard_limit": true, "cpu_cfs_period": 50000,
		"pids_limit": 100, "oom_score_adj": 500, "group_add": []any{"video"},
		"storage_opt":  map[string]any{"size": "40G"},
		"healthchecks": []any{map[string]any{"disable": true}},
		"mounts":       []any{map[string]any{"type": "tmpfs", "target": "/scratch", "tmpfs_options": map[string]any{"size": 1000, "mode": 0o1777}}},
		"mount":        map[string]any{"type": "bind", "source": "rel", "target": "/rel", "bind_options": map[string]any{"propagation": "rslave"}},
	}, defaultPluginConfig())
	require.NoError(t, err)
	require.Equal(t, containerKeys{
		AuthSoftFail:       true,
		PortMap:            map[string]int{"db": 6379},
		Hostname:           "cache-1.example",
		DNSServers:         []string{"10.0.0.2", "fd00::1"},
		DNSSearchDomains:   []string{"service.consul"},
		DNSOptions:         []string{"ndots:2"},
		ExtraHosts:         []string{"db.internal:10.0.0.3", "gw:host-gateway"},
		Logging:            &loggingConfig{Type: "fluentd", Config: map[string]string{"fluentd-address": "localhost:24224", "max-file": "3"}},
		Sysctl:             map[string]string{"net.core.somaxconn": "16384"},
		Ulimits:            []ulimitSpec{{Name: "nofile", Soft: 2048, Hard: 4096}, {Name: "nproc", Soft: 4242, Hard: 4242}},
		ShmSize:            64 << 20,
		Init:               true,
		ReadonlyRootfs:     true,
		Interactive:        true,
		TTY:                true,
		Load:               "local/redis.tar",
		MemoryHardLimitMB:  256,
		CPUHardLimit:       true,
		CPUCFSPeriod:       50000,
		PidsLimit:          100,
		OOMScoreAdj:        500,
		GroupAdd:           []string{"video"},
		StorageOpt:         map[string]string{"size": "40G"},
		HealthcheckDisable: true,
	}, tc.Keys)
	// mount blocks first, then the legacy mounts list, each named by its key.
	require.Equal(t, []mountSpec{
		{Field: "mount[0]", Type: "bind", Source: "rel", Target: "/rel", Options: mountOptions{Propagation: "rslave"}},
		{Field: "mounts[0]", Type: "tmpfs", Target: "/scratch", Options: mountOptions{TmpfsSize: 1000, TmpfsMode: 0o1777}},
	}, tc.Mounts)

	cases := []struct {
		name   string
		config map[string]any
		want   []string
	}{
		{"types", map[string]any{"tty": "yes", "hostname": 3, "dns_servers": "8.8.8.8", "shm_size": "64m", "port_map": []any{map[string]any{"db": "x"}}},
			[]string{"tty must be a bool", "hostname must be a string", "dns_servers must be a list of strings", "shm_size must be an integer", "port_map.db must be an integer"}},
		{"values", map[string]any{"hostname": "bad host", "dns_servers": []any{"dns.example"}, "extra_hosts": []any{"nohost", "h:notip"},
			"port_map": map[string]any{"db": 70000}, "shm_size": 0, "memory_hard_limit": -1, "cpu_cfs_period": 10, "pids_limit": 0,
			"oom_score_adj": -500, "load": "/var/lib/images/redis.tar", "group_add": []any{" "}},
			[]string{`hostname must be a host name without blanks`, `dns_servers[0] must be an IP address, got "dns.example"`, `extra_hosts[0] must be "host:IP"`,
				`extra_hosts[1] must be "host:IP", got "h:notip"`, "port_map.db must be a container port between 1 and 65535, got 70000",
				"shm_size must be a positive number of bytes, got 0", "memory_hard_limit must be a positive number of megabytes, got -1",
				"cpu_cfs_period must be between 1000 and 1000000 microseconds, got 10", "pids_limit must be a positive number of processes, got 0",
				"oom_score_adj must be between 0 and 1000, got -500", `load must be a path relative to the task directory`, "group_add[0] must be a group name or ID"}},
		{"ulimit", map[string]any{"ulimit": map[string]any{"nofile": "4096:2048", "nproc": "many", "bogus": "1"}},
			[]string{`ulimit.nofile soft limit must not exceed the hard limit, got "4096:2048"`, `ulimit.nproc must be "soft" or "soft:hard"`, "ulimit.bogus is not a ulimit Docker knows"}},
		{"logging", map[string]any{"logging": map[string]any{"type": "none", "driver": "x"}}, []string{"logging: driver is not a known option", `logging.type "none" leaves nothing for alloc logs`}},
		{"logging cache disabled", map[string]any{"logging": map[string]any{"type": "syslog", "config": map[string]any{"cache-disabled": "true"}}},
			[]string{`logging.config.cache-disabled = "true" leaves the output of log driver "syslog" unreadable`}},
		{"healthchecks", map[string]any{"healthchecks": map[string]any{"disable": "sometimes", "interval": "1s"}},
			[]string{"healthchecks: disable must be a bool", "healthchecks: interval is not a known option"}},
		{"mounts", map[string]any{"mounts": []any{map[string]any{"type": "bind", "target": "/x"}, "notablock"}}, []string{"mounts[1] must be a block"}},
		{"mounts fields", map[string]any{"mounts": []any{
			map[string]any{"type": "bind", "target": "rel", "bind_options": map[string]any{"propagation": "sideways"}},
			map[string]any{"type": "tmpfs", "target": "/t", "bind_options": map[string]any{"propagation": "rshared"}, "tmpfs_options": map[string]any{"size": -1, "mode": 99999}},
			map[string]any{"type": "volume", "source": "v", "target": "/v", "volume_options": map[string]any{"no_copy": "x", "driver_config": map[string]any{"name": "pxd"}}},
		}},
			[]string{"mounts[0].source is required for a bind mount", "mounts[0].target is required and must be an absolute path",
				`mounts[0].bind_options.propagation must be one of`, `mounts[1].bind_options applies to bind mounts, and this one is of type "tmpfs"`,
				"mounts[1].tmpfs_options.size must not be negative", "mounts[1].tmpfs_options.mode must be a file mode",
				"mounts[2]: no_copy must be a bool",
				"mounts[2].volume_options.driver_config is not supported by Drover's docker driver yet"}},
		{"unsupported", map[string]any{"network_aliases": []any{"db"}, "ipv4_address": "10.0.0.9", "isolation": "process", "volume_driver": "pxd"},
			[]string{"network_aliases is not supported by Drover's docker driver yet: user-defined Docker networks",
				"ipv4_address is not supported by Drover's docker driver yet", "isolation is not supported by Drover's docker driver yet: it is a Windows option",
				"volume_driver is not supported by Drover's docker driver yet"}},
		{"mac, cgroupns, cpuset malformed", map[string]any{"mac_address": "02:68:b3", "cgroupns": "shared", "cpuset_cpus": "3-1"},
			[]string{`mac_address must be a MAC address such as "02:42:ac:11:00:02", got "02:68:b3"`,
				`cgroupns must be "host" or "private", got "shared"`, `cpuset_cpus must be a list of CPUs such as "0-2,4", got "3-1"`}},
		{"mac with the host's network", map[string]any{"mac_address": "02:68:b3:29:da:98", "network_mode": "host"},
			[]string{`mac_address cannot be set with network_mode = "host"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.config["image"] = "redis:7"
			_, err := parseTaskConfig(c.config, defaultPluginConfig())
			require.Error(t, err)
			for _, w := range c.want {
				require.ErrorContains(t, err, w)
			}
			if c.name == "unsupported" || c.name == "mounts fields" {
				require.NotContains(t, err.Error(), "is not a known option", "a known-but-unsupported key is not called unknown")
			}
		})
	}

	// A key Nomad does not have is still unknown.
	_, err = parseTaskConfig(map[string]any{"image": "redis:7", "port_mapp": map[string]any{}}, defaultPluginConfig())
	require.ErrorContains(t, err, "port_mapp is not a known option")
}

// The unsupported keys are refused by the server's check too, whatever
// their value (an interpolated one included: it is not the node's to
// decide).
func TestUnsupportedKeysRefusedAtSubmission(t *testing.T) {
	known, err := drivers.ValidateSubmitted(Name, map[string]any{"image": "redis:7", "network_aliases": []any{"${NOMAD_TASK_NAME}"}})
	require.True(t, known)
	var ue *UnsupportedError
	require.ErrorAs(t, err, &ue)
	require.Equal(t, "network_aliases", ue.Field)
}

func TestContainerSpecKeys(t *testing.T) {
	root := t.TempDir()
	cfg := &drivers.TaskConfig{
		ID: "a1/web", AllocID: "a1", TaskName: "web", JobName: "j", Namespace: "default",
		AllocDir: filepath.Join(root, "alloc"), TaskDir: filepath.Join(root, "web"),
		Env: map[string]string{
			"NOMAD_PORT_http": "8080", "NOMAD_HOST_PORT_http": "25000", "NOMAD_IP_http": "10.1.2.3",
			"NOMAD_PORT_db": "25001", "NOMAD_HOST_PORT_db": "25001", "NOMAD_IP_db": "10.1.2.3",
		},
		MemoryMB: 64, CPU: 500,
	}
	require.NoError(t, os.MkdirAll(filepath.Join(root, "web", "rel"), 0o755))
	defer func(f func() float64) { coreMHz = f }(coreMHz)
	coreMHz = func() float64 { return 2000 }
	tc, err := parseTaskConfig(map[string]any{
		"image": "redis:7", "ports": []any{"http"},
		"port_map": map[string]any{"db": 6379}, "hostname": "cache", "dns_servers": []any{"10.0.0.2"},
		"dns_search_domains": []any{"svc"}, "dns_options": []any{"ndots:2"}, "extra_hosts": []any{"db:10.0.0.3"},
		"logging": map[string]any{"type": "json-file", "config": map[string]any{"max-size": "5m"}},
		"sysctl":  map[string]any{"net.core.somaxconn": "1024"}, "ulimit": map[string]any{"nofile": "1024:2048"},
		"shm_size": 1 << 20, "init": true, "readonly_rootfs": true, "interactive": true, "tty": true,
		"memory_hard_limit": 128, "cpu_hard_limit": true, "pids_limit": 50, "oom_score_adj": 10,
		"group_add": []any{"1234"}, "storage_opt": map[string]any{"size": "1G"}, "healthchecks": map[string]any{"disable": true},
		"mounts": []any{
			map[string]any{"type": "bind", "source": "rel", "target": "/rel", "readonly": true, "bind_options": map[string]any{"propagation": "rslave"}},
			map[string]any{"type": "tmpfs", "target": "/t", "tmpfs_options": map[string]any{"size": 4096}},
			map[string]any{"type": "volume", "source": "v", "target": "/v", "volume_options": map[string]any{"no_copy": true, "labels": map[string]any{"a": "b"}}},
		},
	}, defaultPluginConfig())
	require.NoError(t, err)
	withVolumes := defaultSecurityOptions()
	withVolumes.VolumesEnabled = true // the named volume
	cc, hc, err := containerSpec(cfg, tc, withVolumes, "redis:7")
	require.NoError(t, err)

	require.Equal(t, "cache", cc.Hostname)
	require.True(t, cc.Tty)
	require.True(t, cc.OpenStdin)
	require.Equal(t, []string{"NONE"}, cc.Healthcheck.Test)
	require.Equal(t, []string{"10.0.0.2"}, hc.DNS)
	require.Equal(t, []string{"svc"}, hc.DNSSearch)
	require.Equal(t, []string{"ndots:2"}, hc.DNSOptions)
	require.Equal(t, []string{"db:10.0.0.3"}, hc.ExtraHosts)
	require.Equal(t, container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "5m"}}, hc.LogConfig)
	require.Equal(t, map[string]string{"net.core.somaxconn": "1024"}, hc.Sysctls)
	require.Equal(t, []*container.Ulimit{{Name: "nofile", Soft: 1024, Hard: 2048}}, hc.Ulimits)
	require.Equal(t, int64(1<<20), hc.ShmSize)
	require.True(t, *hc.Init)
	require.True(t, hc.ReadonlyRootfs)
	require.Equal(t, int64(128<<20), hc.Memory)
	require.Equal(t, int64(64<<20), hc.MemoryReservation)
	require.Equal(t, int64(500), hc.CPUShares)
	require.Equal(t, int64(100000), hc.CPUPeriod)
	require.Equal(t, int64(25000), hc.CPUQuota, "500 MHz of 2000 MHz cores is a quarter of a core")
	require.Equal(t, int64(50), *hc.PidsLimit)
	require.Equal(t, 10, hc.OomScoreAdj)
	require.Equal(t, []string{"1234"}, hc.GroupAdd)
	require.Equal(t, map[string]string{"size": "1G"}, hc.StorageOpt)
	require.Equal(t, []mount.Mount{
		{Type: mount.TypeBind, Source: filepath.Join(cfg.TaskDir, "rel"), Target: "/rel", ReadOnly: true, BindOptions: &mount.BindOptions{Propagation: mount.PropagationRSlave}},
		{Type: mount.TypeTmpfs, Target: "/t", TmpfsOptions: &mount.TmpfsOptions{SizeBytes: 4096}},
		{Type: mount.TypeVolume, Source: "v", Target: "/v", VolumeOptions: &mount.VolumeOptions{NoCopy: true, Labels: map[string]string{"a": "b"}}},
	}, hc.Mounts[3:], "after /alloc, /local and /secrets")

	// ports publishes http to its "to"; port_map publishes db's host port
	// to 6379, and the task sees NOMAD_PORT_db=6379.
	require.Equal(t, []nat.PortBinding{{HostIP: "10.1.2.3", HostPort: "25000"}}, hc.PortBindings["8080/tcp"])
	require.Equal(t, []nat.PortBinding{{HostIP: "10.1.2.3", HostPort: "25001"}}, hc.PortBindings["6379/tcp"])
	require.Contains(t, hc.PortBindings, nat.Port("6379/udp"))
	require.Contains(t, cc.Env, "NOMAD_PORT_db=6379")
	require.Contains(t, cc.Env, "NOMAD_HOST_PORT_db=25001")
	require.Contains(t, cc.Env, "NOMAD_PORT_http=8080")

	tc.Keys.PortMap = map[string]int{"admin": 9000}
	_, _, err = containerSpec(cfg, tc, withVolumes, "redis:7")
	require.ErrorContains(t, err, `port_map names port "admin", which is not a port of the group's network block`)

	tc.Keys.PortMap = nil
	tc.Keys.MemoryHardLimitMB = 32
	_, _, err = containerSpec(cfg, tc, withVolumes, "redis:7")
	require.ErrorContains(t, err, "memory_hard_limit (32 MB) must not be less than the task's memory (64 MB)")
	require.False(t, drivers.IsRecoverable(err))

	// Without a logging block: Nomad's json-file with two files of 2 MB.
	tc.Keys.MemoryHardLimitMB, tc.Keys.Logging = 0, nil
	_, hc, err = containerSpec(cfg, tc, withVolumes, "redis:7")
	require.NoError(t, err)
	require.Equal(t, container.LogConfig{Type: "json-file", Config: map[string]string{"max-file": "2", "max-size": "2m"}}, hc.LogConfig)
}

// The legacy mounts list is confined as mount blocks are: with volumes
// disabled a bind outside the allocation directory, or a named volume, is
// refused naming mounts[i].
func TestLegacyMountsConfined(t *testing.T) {
	root := t.TempDir()
	cfg := &drivers.TaskConfig{ID: "a/t", AllocID: "a", TaskName: "t",
		AllocDir: filepath.Join(root, "alloc"), TaskDir: filepath.Join(root, "t")}
	require.NoError(t, os.MkdirAll(cfg.TaskDir, 0o755))
	require.NoError(t, os.Symlink("/etc", filepath.Join(cfg.TaskDir, "escape")))
	tc, err := parseTaskConfig(map[string]any{"image": "redis:7", "mounts": []any{
		map[string]any{"type": "bind", "source": "escape", "target": "/x"},
		map[string]any{"type": "volume", "source": "data", "target": "/data"},
	}}, defaultPluginConfig())
	require.NoError(t, err)
	_, _, err = containerSpec(cfg, tc, defaultSecurityOptions(), "redis:7")
	var pe *PolicyError
	require.ErrorAs(t, err, &pe)
	require.ErrorContains(t, err, `mounts[1].source = "data": named volume "data" needs volumes`)
	err = checkBinds(cfg, tc, defaultSecurityOptions())
	require.ErrorContains(t, err, `mounts[0].source = "escape": `+filepath.Join(cfg.TaskDir, "escape")+` resolves to /etc, outside the allocation directory`)
}

func TestMemoryLimits(t *testing.T) {
	cases := []struct {
		memory, memoryMax, hard int
		limit, reservation      int64
		err                     string
	}{
		{memory: 64, limit: 64 << 20},
		{memory: 64, memoryMax: 128, limit: 128 << 20, reservation: 64 << 20},
		{memory: 64, memoryMax: 128, hard: 256, limit: 256 << 20, reservation: 64 << 20},
		{memory: 64, hard: 64, limit: 64 << 20},
		{memory: 64, hard: 32, err: "must not be less than the task's memory"},
		{memory: 0, limit: 0},
	}
	for _, c := range cases {
		limit, reservation, err := memoryLimits(c.memory, c.memoryMax, c.hard)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, "%+v", c)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, c.limit, limit, "%+v", c)
		require.Equal(t, c.reservation, reservation, "%+v", c)
	}
}

func TestCPUQuota(t *testing.T) {
	cases := []struct {
		cpu        int
		coreMHz    float64
		period     int
		wantPeriod int64
		wantQuota  int64
		what       string
	}{
		{1000, 1000, 0, 100000, 100000, "one core's MHz is one core"},
		{2500, 1000, 0, 100000, 250000, "more than a core"},
		{500, 2000, 50000, 50000, 12500, "a quarter of a core, a shorter period"},
		{1, 3000, 0, 100000, 1000, "never below Docker's least quota"},
		{1000, 0, 0, 100000, 100000, "unknown frequency: 1000 MHz"},
	}
	for _, c := range cases {
		p, q := cpuQuota(c.cpu, c.coreMHz, c.period)
		require.Equal(t, c.wantPeriod, p, c.what)
		require.Equal(t, c.wantQuota, q, c.what)
	}
	require.InDelta(t, 2500.0, meanCoreMHz("processor: 0\ncpu MHz\t\t: 2000.000\nprocessor: 1\ncpu MHz : 3000.0\n"), 0.001)
	require.Equal(t, float64(defaultCoreMHz), meanCoreMHz("processor: 0\n"))
}

func TestPublishedPorts(t *testing.T) {
	env := map[string]string{"NOMAD_PORT_http": "8080", "NOMAD_PORT_db": "25001"}
	require.Equal(t, []publishedPort{
		{Field: "ports", Label: "http", ContainerPort: "8080"},
		{Field: "ports", Label: "db", ContainerPort: "6379"},
		{Field: "port_map", Label: "a", ContainerPort: "1"},
		{Field: "port_map", Label: "b", ContainerPort: "2"},
	}, publishedPorts([]string{"http", "db"}, map[string]int{"db": 6379, "b": 2, "a": 1}, env))
	require.Empty(t, publishedPorts(nil, nil, env))
}

func TestLoadRef(t *testing.T) {
	for in, want := range map[string]string{
		"redis":   "redis:latest",
		"redis:7": "redis:7",
		"127.0.0.1:5000/web:v1@sha256:" + sha("a"): "127.0.0.1:5000/web:v1",
	} {
		got, err := loadRef(in)
		require.NoError(t, err)
		require.Equal(t, want, got, in)
	}
}
