package docker

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/testutil/images"
)

// TestContainerKeysAgainstTheEngine: one container with every container
// key; what reaches it is read back from the engine (docker inspect) and
// from the container's processes.
func TestContainerKeysAgainstTheEngine(t *testing.T) {
	e := newEnv(t)
	ref, _ := e.push("keys", "v1", "1", 0)
	cfg, port := e.taskConfig(ref, map[string]any{
		// port_map instead of ports: the group port has no "to", its
		// host port is mapped to the server's 8080.
		"port_map":           []any{map[string]any{"http": float64(images.Port)}},
		"hostname":           "drover-keys",
		"dns_servers":        []any{"10.9.9.9"},
		"dns_search_domains": []any{"drover.test"},
		"dns_options":        []any{"ndots:3"},
		"extra_hosts":        []any{"db.internal:10.0.0.3"},
		"logging":            []any{map[string]any{"type": "json-file", "config": []any{map[string]any{"max-size": "5m", "max-file": float64(2)}}}},
		"sysctl":             []any{map[string]any{"net.core.somaxconn": "1024"}},
		"ulimit":             []any{map[string]any{"nofile": "1024:2048"}},
		"shm_size":           float64(32 << 20),
		"init":               true,
		"readonly_rootfs":    true,
		"interactive":        true,
		"tty":                true,
		"memory_hard_limit":  float64(128),
		"cpu_hard_limit":     true,
		"cpu_cfs_period":     float64(50000),
		"pids_limit":         float64(64),
		"oom_score_adj":      float64(100),
		"group_add":          []any{"1234"},
		"healthchecks":       []any{map[string]any{"disable": true}},
		"mac_address":        "02:42:ac:11:99:01",
		"cgroupns":           "private",
		"cpuset_cpus":        "0",
		"mounts": []any{
			map[string]any{"type": "tmpfs", "target": "/scratch", "tmpfs_options": []any{map[string]any{"size": float64(8 << 20)}}},
			map[string]any{"type": "bind", "source": "local", "target": "/legacy-local", "readonly": true},
		},
	})
	delete(cfg.Config, "ports")
	require.NoError(t, os.MkdirAll(filepath.Join(cfg.TaskDir, "local"), 0o755)) // as the task runner makes it
	cfg.Env["NOMAD_PORT_http"] = strconv.Itoa(port)                             // no "to": the task would listen on the host port
	defer func(f func() float64) { coreMHz = f }(coreMHz)
	coreMHz = func() float64 { return 1000 }

	h := e.start(cfg)
	require.Equal(t, "version 1\n", get(t, port), "port_map publishes the host port to the container's 8080")
	// With a TTY the server's stderr is the terminal: one stream, copied
	// to the stdout log.
	eventuallyContains(t, cfg.StdoutPath, "webserver: version 1 listening on :8080")

	var st State
	require.NoError(t, json.Unmarshal(h.DriverState, &st))
	ins, err := e.cli.ContainerInspect(context.Background(), st.ContainerID)
	require.NoError(t, err)
	cc, hc := ins.Config, ins.HostConfig
	require.Contains(t, cc.Env, "NOMAD_PORT_http=8080", "the task sees the port it listens on")
	require.Equal(t, "drover-keys", cc.Hostname)
	require.True(t, cc.Tty)
	require.True(t, cc.OpenStdin)
	require.Equal(t, []string{"NONE"}, cc.Healthcheck.Test)
	require.Equal(t, []string{"10.9.9.9"}, hc.DNS)
	require.Equal(t, []string{"drover.test"}, hc.DNSSearch)
	require.Equal(t, []string{"ndots:3"}, hc.DNSOptions)
	require.Equal(t, []string{"db.internal:10.0.0.3"}, hc.ExtraHosts)
	require.Equal(t, "json-file", hc.LogConfig.Type)
	require.Equal(t, map[string]string{"max-size": "5m", "max-file": "2"}, hc.LogConfig.Config)
	require.Equal(t, map[string]string{"net.core.somaxconn": "1024"}, hc.Sysctls)
	require.Len(t, hc.Ulimits, 1)
	require.Equal(t, "nofile", hc.Ulimits[0].Name)
	require.Equal(t, int64(32<<20), hc.ShmSize)
	require.NotNil(t, hc.Init)
	require.True(t, *hc.Init)
	require.True(t, hc.ReadonlyRootfs)
	require.Equal(t, int64(128<<20), hc.Memory)
	require.Equal(t, int64(64<<20), hc.MemoryReservation)
	require.Equal(t, int64(50000), hc.CPUPeriod)
	require.Equal(t, int64(5000), hc.CPUQuota, "100 MHz of a 1000 MHz core is a tenth of each period")
	require.NotNil(t, hc.PidsLimit)
	require.Equal(t, int64(64), *hc.PidsLimit)
	require.Equal(t, 100, hc.OomScoreAdj)
	require.Equal(t, []string{"1234"}, []string(hc.GroupAdd))
	require.Equal(t, "02:42:ac:11:99:01", ins.NetworkSettings.Networks["bridge"].MacAddress, "the container's MAC on Docker's bridge")
	require.Equal(t, container.CgroupnsMode("private"), hc.CgroupnsMode)
	require.Equal(t, "0", hc.CpusetCpus)
	kinds := map[string]string{}
	for _, m := range ins.Mounts {
		kinds[m.Destination] = string(m.Type)
		if m.Destination == "/legacy-local" {
			require.False(t, m.RW)
			require.Equal(t, filepath.Join(cfg.TaskDir, "local"), m.Source)
		}
	}
	require.Equal(t, "bind", kinds["/legacy-local"], "%+v", ins.Mounts)
	require.Equal(t, "tmpfs", kinds["/scratch"], "the legacy tmpfs mount: %+v", ins.Mounts)
	sized := false
	for _, m := range hc.Mounts {
		if m.Target == "/scratch" {
			sized = m.TmpfsOptions != nil && m.TmpfsOptions.SizeBytes == 8<<20
		}
	}
	require.True(t, sized, "tmpfs_options.size reaches the engine: %+v", hc.Mounts)

	// What the container's processes see. With init, PID 1 is Docker's init.
	proc := func(name string) string {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(ins.State.Pid), name))
		require.NoError(t, err)
		return string(b)
	}
	require.Equal(t, "docker-init", strings.TrimSpace(proc("comm")))
	require.Regexp(t, `Max open files\s+1024\s+2048`, proc("limits"))
	require.Equal(t, "100", strings.TrimSpace(proc("oom_score_adj")))
	require.Regexp(t, `(?m)^Groups:.*\b1234\b`, proc("status"))
	resolv := proc("root/etc/resolv.conf")
	require.Contains(t, resolv, "nameserver 10.9.9.9")
	require.Contains(t, resolv, "search drover.test")
	require.Contains(t, resolv, "options ndots:3")
	require.Regexp(t, `10\.0\.0\.3\s+db\.internal`, proc("root/etc/hosts"))
	require.Equal(t, "drover-keys", strings.TrimSpace(proc("root/etc/hostname")))
	require.Regexp(t, `(?m) /scratch .* - tmpfs \S+ .*size=8192k`, proc("mountinfo"))
	require.Regexp(t, `(?m)^\S+ \S+ \S+ / / ro,`, proc("mountinfo"), "readonly_rootfs: the root is mounted read-only")
	require.NoError(t, e.d.StopTask(cfg.ID, 0, ""))
}

// TestLoadAndAuthSoftFailAgainstTheEngine: auth_soft_fail pulls
// anonymously when the credentials cannot be read; load runs the image of
// a tarball in the task dir without a registry, and only one inside the
// allocation directory.
func TestLoadAndAuthSoftFailAgainstTheEngine(t *testing.T) {
	e := newEnv(t)
	ref, _ := e.push("load", "v1", "1", 0)
	require.NoError(t, e.d.SetConfig(map[string]any{"auth": map[string]any{"config": filepath.Join(t.TempDir(), "missing.json")}}))

	cfg, _ := e.taskConfig(ref, nil)
	err := e.d.PrepareTask(context.Background(), cfg, nil)
	require.ErrorContains(t, err, "reading registry credentials")
	cfg.Config["auth_soft_fail"] = true
	require.NoError(t, e.d.PrepareTask(context.Background(), cfg, nil))
	id, err := e.d.ImageID(context.Background(), ref)
	require.NoError(t, err)

	// The image goes into a tarball in the task's local/, then away from
	// the engine; the registry goes too.
	body, err := e.cli.ImageSave(context.Background(), []string{ref})
	require.NoError(t, err)
	loadCfg, port := e.taskConfig(ref, map[string]any{"load": "local/web.tar"})
	require.NoError(t, os.MkdirAll(filepath.Join(loadCfg.TaskDir, "local"), 0o755))
	f, err := os.Create(filepath.Join(loadCfg.TaskDir, "local", "web.tar"))
	require.NoError(t, err)
	_, err = io.Copy(f, body)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	body.Close()
	_, err = e.cli.ImageRemove(context.Background(), id, image.RemoveOptions{Force: true})
	require.NoError(t, err)
	e.reg.Close()

	require.NoError(t, e.d.PrepareTask(context.Background(), loadCfg, nil), "nothing to pull")
	h := e.start(loadCfg)
	require.Equal(t, "version 1\n", get(t, port))
	var st State
	require.NoError(t, json.Unmarshal(h.DriverState, &st))
	require.Equal(t, id, st.ImageID)
	ins, err := e.cli.ContainerInspect(context.Background(), st.ContainerID)
	require.NoError(t, err)
	require.Equal(t, "json-file", ins.HostConfig.LogConfig.Type, "without a logging block: Nomad's default")
	require.Equal(t, map[string]string{"max-file": "2", "max-size": "2m"}, ins.HostConfig.LogConfig.Config)
	require.NoError(t, e.d.StopTask(loadCfg.ID, 0, ""))

	// A tarball that leads out of the allocation directory is refused
	// before anything is loaded or created.
	evil, _ := e.taskConfig(ref, map[string]any{"load": "local/evil.tar"})
	require.NoError(t, os.MkdirAll(filepath.Join(evil.TaskDir, "local"), 0o755))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(evil.TaskDir, "local", "evil.tar")))
	err = e.d.PrepareTask(context.Background(), evil, nil)
	require.ErrorContains(t, err, "resolves to /etc/passwd, outside the allocation directory")
	_, err = e.d.StartTask(evil)
	require.ErrorContains(t, err, "resolves to /etc/passwd, outside the allocation directory")
	require.False(t, drivers.IsRecoverable(err))
	_, err = e.cli.ContainerInspect(context.Background(), containerName(evil))
	require.Error(t, err, "no container for a refused load")
}
