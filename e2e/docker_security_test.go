package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	dockerclient "github.com/docker/docker/client"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/testutil/images"
	"github.com/drover-project/drover/testutil/registry"
)

// escape is one way a job submitter could reach the host through the
// Docker driver. The same job runs on a client with the default plugin
// options (refused) and on one whose operator allowed everything.
type escape struct {
	group   string
	config  string   // HCL inside the hostile task's config block
	args    []string // probe steps of the hostile task (then it sleeps)
	planted string   // when set, a planter task of the group first links /alloc/data/link to it
	refused string   // the text the strict client's task event carries
	// allowed checks the hostile task on the permissive client: its
	// stdout, its container (nil if it never started) and its events.
	allowed func(t *testing.T, out string, ins *container.InspectResponse, events []*api.TaskEvent)
	// writes is the file the hostile task creates in the host directory
	// when it gets there ("" for none).
	writes string
}

const strictNode, openNode = "dsec-strict", "dsec-open"

// hostileJobHCL renders one service job with a group per escape, placed on
// node; every task runs the probe image.
func hostileJobHCL(jobID, node, image string, escapes []escape) string {
	var b strings.Builder
	fmt.Fprintf(&b, `job %q {
  datacenters = ["dc1"]
  type        = "service"
  constraint {
    attribute = "${node.unique.name}"
    operator  = "="
    value     = %q
  }
`, jobID, node)
	quote := func(ss []string) string {
		q := make([]string, len(ss))
		for i, s := range ss {
			q[i] = strconv.Quote(s)
		}
		return strings.Join(q, ", ")
	}
	for _, e := range escapes {
		fmt.Fprintf(&b, `  group %q {
    # A hostile task whose planted link is not there yet retries (a
    # missing bind source is recoverable) while the planter starts.
    restart {
      attempts = 40
      interval = "10m"
      delay    = "500ms"
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
`, e.group)
		if e.planted != "" {
			fmt.Fprintf(&b, `    task "planter" {
      driver = "docker"
      config {
        image = %q
        args  = ["probe", "ln", %q, "/alloc/data/link", "sleep"]
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
`, image, e.planted)
		}
		fmt.Fprintf(&b, `    task "hostile" {
      driver = "docker"
      config {
        image = %q
        args  = ["probe", %s, "sleep"]
%s
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
  }
`, image, quote(e.args), e.config)
	}
	b.WriteString("}\n")
	return b.String()
}

// TestDockerHostileJobs runs every known way out of a Docker task on a
// client with the default plugin options: each is refused with a task
// event naming the field, the value and the option, no container starts,
// and the host directory the tasks aim at is untouched. Path escapes are
// also tried through a symlink planted by a sibling task of the same
// allocation, and through relative paths. The same job on a client whose
// operator opted in to every option runs, and each task shows it got what
// it asked for.
func TestDockerHostileJobs(t *testing.T) {
	requireDocker(t)
	ctx := context.Background()
	cli, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation())
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })

	// The host directory every path escape aims at, world-writable so a
	// task that gets there can leave its mark.
	hostDir := filepath.Join(t.TempDir(), "host")
	require.NoError(t, os.MkdirAll(hostDir, 0o777))
	require.NoError(t, os.Chmod(hostDir, 0o777))
	secret := fmt.Sprintf("host secret %d", time.Now().UnixNano())
	require.NoError(t, os.WriteFile(filepath.Join(hostDir, "secret"), []byte(secret+"\n"), 0o644))

	// An engine runtime other than the default ones, for allow_runtimes.
	info, err := cli.Info(ctx)
	require.NoError(t, err)
	var runtime string
	for name := range info.Runtimes {
		if name != "runc" && name != "nvidia" && (runtime == "" || name < runtime) {
			runtime = name
		}
	}
	volumeName := fmt.Sprintf("drover-dsec-%d", time.Now().UnixNano())
	t.Cleanup(func() { _ = cli.VolumeRemove(context.Background(), volumeName, true) })

	hostNS := func(kind string) string {
		l, err := os.Readlink("/proc/self/ns/" + kind)
		require.NoError(t, err)
		return l
	}
	const refusedVolumes = `, and volumes are disabled on this client: set plugin "docker" { config { volumes { enabled = true } } }`
	up := strings.Repeat("../", 24) // from the task dir, past the host's root
	wrote := func(name string) func(t *testing.T, out string, _ *container.InspectResponse, _ []*api.TaskEvent) {
		return func(t *testing.T, out string, _ *container.InspectResponse, _ []*api.TaskEvent) {
			require.Contains(t, out, secret, "the task read the host's file")
			require.FileExists(t, filepath.Join(hostDir, name), "the task wrote into the host directory")
		}
	}
	sameNS := func(kind string) func(t *testing.T, out string, ins *container.InspectResponse, _ []*api.TaskEvent) {
		return func(t *testing.T, out string, ins *container.InspectResponse, _ []*api.TaskEvent) {
			require.Contains(t, out, hostNS(kind), "the task is in the host's %s namespace", kind)
		}
	}
	escapes := []escape{
		{group: "volume-root", config: `volumes = ["/:/hostroot"]`,
			args:    []string{"cat", "/hostroot" + hostDir + "/secret", "write", "/hostroot" + hostDir + "/pwned-volume-root"},
			refused: `volumes[0] = "/:/hostroot": / is outside the allocation directory` + refusedVolumes,
			writes:  "pwned-volume-root"},
		{group: "volume-relative", config: fmt.Sprintf(`volumes = ["%s%s:/up"]`, up, hostDir[1:]),
			args:    []string{"cat", "/up/secret", "write", "/up/pwned-volume-relative"},
			refused: fmt.Sprintf(`volumes[0] = "%s%s:/up": %s is outside the allocation directory`, up, hostDir[1:], hostDir) + refusedVolumes,
			writes:  "pwned-volume-relative"},
		{group: "mount-bind", config: fmt.Sprintf(`mount {
          type   = "bind"
          source = %q
          target = "/h"
        }`, hostDir),
			args:    []string{"cat", "/h/secret", "write", "/h/pwned-mount-bind"},
			refused: fmt.Sprintf(`mount[0].source = %q: %s is outside the allocation directory`, hostDir, hostDir) + refusedVolumes,
			writes:  "pwned-mount-bind"},
		{group: "planted-volume", planted: "/", config: `volumes = ["../alloc/data/link:/hostroot"]`,
			args:    []string{"cat", "/hostroot" + hostDir + "/secret", "write", "/hostroot" + hostDir + "/pwned-planted-volume"},
			refused: `/../alloc/data/link resolves to /, outside the allocation directory` + refusedVolumes,
			writes:  "pwned-planted-volume"},
		{group: "planted-mount", planted: hostDir, config: `mount {
          type   = "bind"
          source = "../alloc/data/link"
          target = "/h"
        }`,
			args:    []string{"cat", "/h/secret", "write", "/h/pwned-planted-mount"},
			refused: `/../alloc/data/link resolves to ` + hostDir + `, outside the allocation directory` + refusedVolumes,
			writes:  "pwned-planted-mount"},
		{group: "planted-absolute", planted: "/", config: fmt.Sprintf(`volumes = ["${NOMAD_ALLOC_DIR}/data/link%s:/h"]`, hostDir),
			args:    []string{"cat", "/h/secret", "write", "/h/pwned-planted-absolute"},
			refused: `/alloc/data/link` + hostDir + ` resolves to ` + hostDir + `, outside the allocation directory` + refusedVolumes,
			writes:  "pwned-planted-absolute"},
		{group: "privileged", config: `privileged = true`, args: []string{"readlink", "/proc/self/ns/pid"},
			refused: `privileged = true: privileged containers are not allowed on this client: set plugin "docker" { config { allow_privileged = true } }`,
			allowed: func(t *testing.T, _ string, ins *container.InspectResponse, events []*api.TaskEvent) {
				if ins != nil {
					require.True(t, ins.HostConfig.Privileged)
					return
				}
				// Allowed, but this engine (Docker in a container
				// without every capability) cannot start one.
				msg := lastFailure(events)
				require.Contains(t, msg, "starting container", "the engine, not the driver, refused it")
				require.NotContains(t, msg, "not allowed on this client")
				t.Logf("this engine cannot run privileged containers: %s", msg)
			}},
		{group: "cap-sys-admin", config: `cap_add = ["SYS_ADMIN"]`, args: []string{"cat", "/proc/self/status"},
			refused: `cap_add[0] = "SYS_ADMIN": capability "sys_admin" is not in allow_caps on this client: set plugin "docker" { config { allow_caps = ["audit_write", "chown", "dac_override", "fowner", "fsetid", "kill", "mknod", "net_bind_service", "setfcap", "setgid", "setpcap", "setuid", "sys_chroot", "sys_admin"] } }`,
			allowed: func(t *testing.T, out string, _ *container.InspectResponse, _ []*api.TaskEvent) {
				require.NotZero(t, capEff(t, out)&(1<<21), "CAP_SYS_ADMIN is effective:\n%s", out)
			}},
		{group: "pid-host", config: `pid_mode = "host"`, args: []string{"readlink", "/proc/self/ns/pid"},
			refused: `pid_mode = "host": pid mode "host" is not in allowed_modes on this client: set plugin "docker" { config { allowed_modes { pid = ["private", "host"] } } }`,
			allowed: sameNS("pid")},
		{group: "ipc-host", config: `ipc_mode = "host"`, args: []string{"readlink", "/proc/self/ns/ipc"},
			refused: `ipc_mode = "host": ipc mode "host" is not in allowed_modes on this client: set plugin "docker" { config { allowed_modes { ipc = ["private", "host"] } } }`,
			allowed: sameNS("ipc")},
		{group: "uts-host", config: `uts_mode = "host"`, args: []string{"readlink", "/proc/self/ns/uts"},
			refused: `uts_mode = "host": uts mode "host" is not in allowed_modes on this client: set plugin "docker" { config { allowed_modes { uts = ["private", "host"] } } }`,
			allowed: sameNS("uts")},
		{group: "userns-host", config: `userns_mode = "host"`, args: []string{"readlink", "/proc/self/ns/user"},
			refused: `userns_mode = "host": userns mode "host" is not in allowed_modes on this client: set plugin "docker" { config { allowed_modes { userns = ["private", "host"] } } }`,
			allowed: func(t *testing.T, out string, ins *container.InspectResponse, _ []*api.TaskEvent) {
				require.True(t, ins.HostConfig.UsernsMode.IsHost())
				require.Contains(t, out, hostNS("user"))
			}},
		{group: "devices", config: `devices = [
          {
            host_path      = "/dev/null"
            container_path = "/dev/drover-null"
          }
        ]`, args: []string{"ls", "/dev"},
			refused: `devices[0].host_path = "/dev/null": host devices are not allowed on this client: set plugin "docker" { config { allow_devices = true } }`,
			allowed: func(t *testing.T, out string, ins *container.InspectResponse, _ []*api.TaskEvent) {
				require.Contains(t, strings.Fields(out), "drover-null")
				require.Len(t, ins.HostConfig.Devices, 1)
			}},
		{group: "named-volume", config: fmt.Sprintf(`volumes = ["%s:/v"]`, volumeName), args: []string{"write", "/v/x"},
			refused: fmt.Sprintf(`volumes[0] = "%s:/v": named volume %q needs volumes`, volumeName, volumeName) + refusedVolumes,
			allowed: func(t *testing.T, out string, ins *container.InspectResponse, _ []*api.TaskEvent) {
				require.Contains(t, out, "wrote /v/x")
				require.True(t, slices.ContainsFunc(ins.Mounts, func(m container.MountPoint) bool { return m.Name == volumeName }))
			}},
		{group: "named-volume-mount", config: fmt.Sprintf(`mount {
          type   = "volume"
          source = %q
          target = "/v"
        }`, volumeName), args: []string{"write", "/v/y"},
			refused: fmt.Sprintf(`mount[0].source = %q: named volume %q needs volumes`, volumeName, volumeName) + refusedVolumes,
			allowed: func(t *testing.T, out string, ins *container.InspectResponse, _ []*api.TaskEvent) {
				require.Contains(t, out, "wrote /v/y")
				require.True(t, slices.ContainsFunc(ins.Mounts, func(m container.MountPoint) bool { return m.Name == volumeName }))
			}},
	}
	if runtime != "" {
		escapes = append(escapes, escape{group: "runtime", config: fmt.Sprintf(`runtime = %q`, runtime), args: []string{"ls", "/"},
			refused: fmt.Sprintf(`runtime = %q: runtime %q is not in allow_runtimes on this client: set plugin "docker" { config { allow_runtimes = ["runc", "nvidia", %q] } }`, runtime, runtime, runtime),
			allowed: func(t *testing.T, _ string, ins *container.InspectResponse, _ []*api.TaskEvent) {
				require.Equal(t, runtime, ins.HostConfig.Runtime)
			}})
	} else {
		t.Logf("the engine has no runtime besides runc: allow_runtimes is covered by the driver's tests only")
	}
	for i := range escapes {
		if escapes[i].writes != "" {
			escapes[i].allowed = wrote(escapes[i].writes)
		}
	}
	// What the default options keep allowed, as Nomad's do.
	allowedByDefault := escape{group: "network-host", config: `network_mode = "host"`, args: []string{"readlink", "/proc/self/ns/net"}}

	reg := registry.Start(t, registry.Options{})
	img, err := images.Build(images.BuildOptions{Version: "dsec", Seed: time.Now().UnixNano()})
	require.NoError(t, err)
	ref := reg.Ref("drover-e2e/dsec-probe", "v1")
	digest, err := images.Push(img, ref)
	require.NoError(t, err)
	t.Cleanup(func() {
		removeImages(t, []string{ref, ref + "@" + digest, strings.TrimSuffix(ref, ":v1") + "@" + digest})
	})

	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	newClientAgentWith(t, strictNode, "", "", srv.httpHostPort())
	caps := `"audit_write", "chown", "dac_override", "fowner", "fsetid", "kill", "mknod", "net_bind_service", "setfcap", "setgid", "setpcap", "setuid", "sys_chroot", "sys_admin"`
	newClientAgentWith(t, openNode, "", fmt.Sprintf(`plugin "docker" {
  config {
    volumes {
      enabled = true
    }
    allow_privileged = true
    allow_devices    = true
    allow_caps       = [%s]
    allow_runtimes   = ["runc", "nvidia", %q]
    allowed_modes {
      pid    = ["private", "host"]
      ipc    = ["private", "host"]
      uts    = ["private", "host"]
      userns = ["private", "host"]
    }
  }
}`, caps, runtime), srv.httpHostPort())
	waitReadyNodes(t, c, 2)

	all := append(slices.Clone(escapes), allowedByDefault)
	var allocIDs []string
	t.Cleanup(func() {
		for _, j := range []string{"hostile-strict", "hostile-open"} {
			_, _ = drover(t, srv.httpAddr(), "job", "stop", "-purge", "-yes", j)
		}
		removeAllocContainers(t, allocIDs)
	})
	run := func(jobID, node string) {
		code, out := drover(t, srv.httpAddr(), "job", "run", "-detach", writeJobFile(t, hostileJobHCL(jobID, node, ref, all)))
		require.Equal(t, 0, code, out)
	}

	// settled waits until every group of job has an allocation whose
	// hostile task is running or has failed it, and returns them by group.
	settled := func(jobID string) map[string]*api.Allocation {
		out := map[string]*api.Allocation{}
		require.Eventually(t, func() bool {
			stubs, _, err := c.Jobs().Allocations(jobID, true, nil)
			if err != nil {
				return false
			}
			for _, s := range stubs {
				// Running, or failed for good: a task waiting to restart
				// (a bind source not planted yet) has not settled.
				ts := s.TaskStates["hostile"]
				terminal := s.ClientStatus == "failed" || s.ClientStatus == "complete"
				if ts == nil || !(ts.State == "running" || (ts.State == "dead" && terminal)) {
					continue
				}
				a, _, err := c.Allocations().Info(s.ID, nil)
				if err == nil {
					out[s.TaskGroup] = a
				}
			}
			return len(out) == len(all)
		}, 90*time.Second, 250*time.Millisecond, "every group of %s settles", jobID)
		for _, a := range out {
			allocIDs = append(allocIDs, a.ID)
		}
		return out
	}

	hostileContainer := func(allocID string) *container.InspectResponse {
		list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
			filters.Arg("label", "drover.alloc_id="+allocID), filters.Arg("label", "drover.task_name=hostile"))})
		require.NoError(t, err)
		if len(list) == 0 {
			return nil
		}
		ins, err := cli.ContainerInspect(ctx, list[0].ID)
		require.NoError(t, err)
		return &ins
	}

	// The strict client first: the permissive one will write into the
	// host directory and create the volume.
	run("hostile-strict", strictNode)
	strict := settled("hostile-strict")
	for _, e := range escapes {
		t.Run("refused/"+e.group, func(t *testing.T) {
			a := strict[e.group]
			ts := a.TaskStates["hostile"]
			require.Equal(t, "dead", ts.State)
			require.True(t, ts.Failed)
			msg := lastFailure(ts.Events)
			require.Contains(t, msg, e.refused)
			t.Logf("event: %s", msg)
			require.Nil(t, hostileContainer(a.ID), "no container was created")
		})
	}
	t.Run("refused/host untouched", func(t *testing.T) {
		ents, err := os.ReadDir(hostDir)
		require.NoError(t, err)
		require.Len(t, ents, 1, "only the secret is in the host directory")
		vols, err := cli.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("name", volumeName))})
		require.NoError(t, err)
		require.Empty(t, vols.Volumes, "the refused named volume was never created")
	})
	t.Run("allowed by default/network-host", func(t *testing.T) {
		a := strict[allowedByDefault.group]
		require.Equal(t, "running", a.TaskStates["hostile"].State)
		out := probeOutput(t, srv, a.ID, allowedByDefault.args)
		require.Contains(t, out, hostNS("net"))
	})

	// A refused new version leaves the old allocation running: the
	// replacement fails at prepare, before the old one is stopped.
	t.Run("refused update keeps the old allocation", func(t *testing.T) {
		v0 := escape{group: "web", args: []string{"readlink", "/proc/self/ns/pid"}}
		v1 := v0
		v1.config = `privileged = true`
		for _, v := range []escape{v0, v1} {
			code, out := drover(t, srv.httpAddr(), "job", "run", "-detach", writeJobFile(t, hostileJobHCL("hostile-update", strictNode, ref, []escape{v})))
			require.Equal(t, 0, code, out)
			if v.config == "" {
				require.Eventually(t, func() bool { return len(runningAllocs(t, c, "hostile-update")) == 1 },
					60*time.Second, 250*time.Millisecond, "version 0 runs")
			}
		}
		t.Cleanup(func() { _, _ = drover(t, srv.httpAddr(), "job", "stop", "-purge", "-yes", "hostile-update") })
		var old, repl *api.AllocationListStub
		require.Eventually(t, func() bool {
			stubs, _, err := c.Jobs().Allocations("hostile-update", true, nil)
			if err != nil {
				return false
			}
			old, repl = nil, nil
			for _, s := range stubs {
				switch s.JobVersion {
				case 0:
					old = s
				case 1:
					repl = s
				}
			}
			return repl != nil && repl.ClientStatus == "failed"
		}, 60*time.Second, 250*time.Millisecond, "version 1 fails")
		for _, a := range []*api.AllocationListStub{old, repl} {
			allocIDs = append(allocIDs, a.ID)
		}
		require.Contains(t, lastFailure(repl.TaskStates["hostile"].Events), `privileged = true: privileged containers are not allowed on this client`)
		require.Equal(t, "running", old.ClientStatus, "the old allocation keeps running")
		ins := hostileContainer(old.ID)
		require.NotNil(t, ins)
		require.True(t, ins.State.Running)
		require.Nil(t, hostileContainer(repl.ID))
	})

	run("hostile-open", openNode)
	open := settled("hostile-open")
	for _, e := range append(slices.Clone(escapes), allowedByDefault) {
		t.Run("allowed/"+e.group, func(t *testing.T) {
			a := open[e.group]
			ts := a.TaskStates["hostile"]
			ins := hostileContainer(a.ID)
			if ts.State != "running" {
				for _, ev := range ts.Events {
					t.Logf("%s event %s: %s", ts.State, ev.Type, ev.DisplayMessage)
				}
				require.NotNil(t, e.allowed, "the task failed: %s", lastFailure(ts.Events))
				require.NotContains(t, lastFailure(ts.Events), "on this client: set plugin")
				e.allowed(t, "", nil, ts.Events)
				return
			}
			require.NotNil(t, ins)
			out := probeOutput(t, srv, a.ID, e.args)
			if e.allowed != nil {
				e.allowed(t, out, ins, ts.Events)
			} else {
				require.Contains(t, out, hostNS("net"), "host networking stays allowed")
			}
		})
	}
}

// probeOutput waits until the hostile task's stdout shows the probe ran
// its steps (a few lines), and returns it.
func probeOutput(t *testing.T, srv *agentProc, allocID string, args []string) string {
	t.Helper()
	var out string
	require.Eventually(t, func() bool {
		var code int
		code, out = drover(t, srv.httpAddr(), "alloc", "logs", allocID, "hostile")
		return code == 0 && strings.TrimSpace(out) != ""
	}, 20*time.Second, 250*time.Millisecond, "the probe (%v) writes its output", args)
	return out
}

// lastFailure is the message of the last event carrying a driver error
// (the one that says why the task failed), else of the last event.
func lastFailure(events []*api.TaskEvent) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].DriverError != "" {
			return events[i].DisplayMessage
		}
	}
	if len(events) == 0 {
		return ""
	}
	return events[len(events)-1].DisplayMessage
}

// capEff parses the CapEff line of a /proc/<pid>/status.
func capEff(t *testing.T, status string) uint64 {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no CapEff in %q", status)
	return 0
}
