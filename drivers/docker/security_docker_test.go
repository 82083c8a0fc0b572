package docker

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
)

// TestSecurityOptionsAgainstTheEngine: a refused setting fails prepare
// before the image is pulled and start before a container exists; once the
// operator allows them, every setting reaches the container.
func TestSecurityOptionsAgainstTheEngine(t *testing.T) {
	e := newEnv(t)
	ref, _ := e.push("sec", "v1", "1", 0)
	hostile := map[string]any{
		"privileged": true, "cap_add": []any{"SYS_ADMIN"}, "pid_mode": "host", "ipc_mode": "host",
		"uts_mode": "host", "userns_mode": "host", "runtime": "runc", "security_opt": []any{"no-new-privileges"},
		"devices": []any{map[string]any{"host_path": "/dev/null", "container_path": "/dev/drover-null", "cgroup_permissions": "r"}},
		"volumes": []any{"/:/hostroot:ro"},
	}
	cfg, _ := e.taskConfig(ref, hostile)
	marker := filepath.Join(cfg.TaskDir, "..", "outside-marker")

	err := e.d.PrepareTask(context.Background(), cfg, nil)
	var pe *PolicyError
	require.ErrorAs(t, err, &pe)
	require.ErrorContains(t, err, `privileged = true: privileged containers are not allowed on this client`)
	require.ErrorContains(t, err, `volumes[0] = "/:/hostroot:ro": / is outside the allocation directory`)
	_, err = e.d.ImageID(context.Background(), ref)
	require.ErrorIs(t, err, ErrImageNotFound, "nothing is pulled for a refused task")

	_, err = e.d.StartTask(cfg)
	require.ErrorAs(t, err, &pe)
	require.False(t, drivers.IsRecoverable(err))
	_, err = e.cli.ContainerInspect(context.Background(), containerName(cfg))
	require.Error(t, err, "no container is created for a refused task")
	_, err = e.d.ImageID(context.Background(), ref)
	require.ErrorIs(t, err, ErrImageNotFound)
	require.NoFileExists(t, marker)

	require.NoError(t, e.d.SetConfig(map[string]any{
		"volumes":          map[string]any{"enabled": true},
		"allow_privileged": true,
		"allow_devices":    true,
		"allow_caps":       append(append([]any{}, anySlice(DefaultAllowCaps)...), "sys_admin"),
		"allowed_modes": map[string]any{
			"pid": []any{"private", "host"}, "ipc": []any{"private", "host"}, "uts": []any{"private", "host"}, "userns": []any{"private", "host"},
		},
	}))
	// Privileged apart: some engines (this project's CI runs Docker in a
	// container without every capability) cannot start one at all.
	delete(cfg.Config, "privileged")
	h := e.start(cfg)
	var st State
	require.NoError(t, json.Unmarshal(h.DriverState, &st))
	ins, err := e.cli.ContainerInspect(context.Background(), st.ContainerID)
	require.NoError(t, err)
	hc := ins.HostConfig
	require.False(t, hc.Privileged)
	require.Equal(t, []string{"sys_admin"}, normalizeCaps(hc.CapAdd))
	require.True(t, hc.PidMode.IsHost())
	require.True(t, hc.IpcMode.IsHost())
	require.True(t, hc.UTSMode.IsHost())
	require.True(t, hc.UsernsMode.IsHost())
	require.Equal(t, "runc", hc.Runtime)
	require.Contains(t, hc.SecurityOpt, "no-new-privileges") // the engine adds label=disable for host namespaces
	require.Len(t, hc.Devices, 1)
	require.Equal(t, "/dev/drover-null", hc.Devices[0].PathInContainer)
	found := false
	for _, m := range ins.Mounts {
		if m.Destination == "/hostroot" {
			found = m.Source == "/" && !m.RW
		}
	}
	require.True(t, found, "the host root is bound read-only at /hostroot: %+v", ins.Mounts)
	require.NoError(t, e.d.StopTask(cfg.ID, 0, ""))

	priv, _ := e.taskConfig(ref, map[string]any{"privileged": true})
	h, err = e.d.StartTask(priv)
	if err != nil {
		// The option let it through; the engine could not run it.
		require.False(t, errors.As(err, &pe), "%v", err)
		require.ErrorContains(t, err, "starting container")
		t.Logf("this engine cannot start a privileged container: %v", err)
		return
	}
	t.Cleanup(func() { _ = e.d.DestroyTask(priv.ID, true) })
	require.NoError(t, json.Unmarshal(h.DriverState, &st))
	ins, err = e.cli.ContainerInspect(context.Background(), st.ContainerID)
	require.NoError(t, err)
	require.True(t, ins.HostConfig.Privileged)
}

// TestDefaultCapabilitiesWithinAllowCaps: with the default options a
// container runs without net_raw (Docker grants it, allow_caps does not).
func TestDefaultCapabilitiesWithinAllowCaps(t *testing.T) {
	e := newEnv(t)
	ref, _ := e.push("caps", "v1", "1", 0)
	cfg, _ := e.taskConfig(ref, map[string]any{"cap_add": []any{"net_bind_service"}})
	h := e.start(cfg)
	var st State
	require.NoError(t, json.Unmarshal(h.DriverState, &st))
	ins, err := e.cli.ContainerInspect(context.Background(), st.ContainerID)
	require.NoError(t, err)
	require.Equal(t, []string{"net_raw"}, normalizeCaps(ins.HostConfig.CapDrop))
	require.Equal(t, []string{"net_bind_service"}, normalizeCaps(ins.HostConfig.CapAdd))
	require.False(t, ins.HostConfig.Privileged)
	// The status of the container's process shows the effective set: no
	// CAP_NET_RAW (bit 13).
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(ins.State.Pid), "status"))
	require.NoError(t, err)
	var eff uint64
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			eff, err = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			require.NoError(t, err)
		}
	}
	require.NotZero(t, eff)
	require.Zero(t, eff&(1<<13), "net_raw is dropped")
	require.NotZero(t, eff&(1<<10), "net_bind_service is kept")
	require.NoError(t, e.d.StopTask(cfg.ID, 0, ""))
}

func normalizeCaps(caps []string) []string {
	out := make([]string, len(caps))
	for i, c := range caps {
		out[i] = normalizeCap(c)
	}
	return out
}
