package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// TestExecPlantedSymlinksRefused: tasks of an allocation plant symlinks to
// host paths where the driver later writes, and the later start is refused
// with a Driver Failure event naming the path; the host paths are
// untouched.
//
//   - group "logs": task plant (as root) replaces task main's stdout log,
//     alloc/logs/main.stdout.0, with a link to a host file while main
//     runs; main then fails, and its restart is refused instead of
//     appending its output to that file.
//   - group "taskdir": a task (as root) replaces its local/ with a link to
//     a host directory and fails; its restart is refused instead of giving
//     the host directory to the task's user.
func TestExecPlantedSymlinksRefused(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	client := newClientAgent(t, "client-1", srv.httpHostPort())
	waitReadyNodes(t, c, 1)
	nodeID := nodeIDOf(t, c, "client-1")
	var exec *api.DriverInfo
	require.Eventually(t, func() bool {
		n, _, err := c.Nodes().Info(nodeID, nil)
		require.NoError(t, err)
		exec = n.Drivers["exec"]
		return exec != nil
	}, 30*time.Second, 100*time.Millisecond)
	if !exec.Detected {
		t.Skipf("SKIPPED: the exec driver cannot run tasks here (euid %d): %s", os.Geteuid(), exec.HealthDescription)
	}

	host := t.TempDir() // stands for /etc, /root: host paths no task may reach
	require.NoError(t, os.Chmod(host, 0o700))
	victim := filepath.Join(host, "authorized_keys")
	hostDir := filepath.Join(host, "dir")
	require.NoError(t, os.Mkdir(hostDir, 0o700))

	sh := func(name, script string) *api.Task {
		task := api.NewTask(name, "exec").SetConfig("command", "/bin/sh").SetConfig("args", []string{"-c", script})
		task.Resources = &api.Resources{CPU: new(50), MemoryMB: new(32)}
		return task
	}
	// plant swaps main's log for a link once main runs; main fails once
	// it has, and its restart opens the log again.
	plant := sh("plant", "rm -f /alloc/logs/main.stdout.0 && ln -s "+victim+" /alloc/logs/main.stdout.0 && touch /alloc/data/planted")
	plant.User = "root"
	main := sh("main", "echo ssh-ed25519 attacker; while [ ! -e /alloc/data/planted ]; do sleep 0.1; done; exit 1")
	logs := api.NewTaskGroup("logs", 1).AddTask(plant).AddTask(main)

	swap := sh("swap", "[ -L /local ] && exit 0; rm -rf /local && ln -s "+hostDir+" /local; exit 1")
	swap.User = "root"
	taskdir := api.NewTaskGroup("taskdir", 1).AddTask(swap)
	for _, tg := range []*api.TaskGroup{logs, taskdir} {
		tg.RestartPolicy = &api.RestartPolicy{Attempts: new(1), Delay: new(time.Second), Interval: new(time.Minute), Mode: new("fail")}
		tg.ReschedulePolicy = &api.ReschedulePolicy{Attempts: new(0), Unlimited: new(false)}
	}

	job := api.NewBatchJob("planted", "planted", "global", 50)
	job.Datacenters = []string{"dc1"}
	job.AddTaskGroup(logs).AddTaskGroup(taskdir)
	_, _, err := c.Jobs().Register(job, nil)
	require.NoError(t, err)

	failures := func(group, task string) []string {
		allocs, _, err := c.Jobs().Allocations("planted", true, nil)
		require.NoError(t, err)
		for _, a := range allocs {
			if a.TaskGroup != group {
				continue
			}
			full, _, err := c.Allocations().Info(a.ID, nil)
			require.NoError(t, err)
			var out []string
			if st := full.TaskStates[task]; st != nil && st.State == "dead" {
				for _, e := range st.Events {
					if e.Type == "Driver Failure" {
						out = append(out, e.DisplayMessage)
					}
				}
			}
			return out
		}
		return nil
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		allocs, _, _ := c.Jobs().Allocations("planted", true, nil)
		for _, a := range allocs {
			for _, f := range []string{"plant.stderr.0", "main.stderr.0"} {
				b, _ := os.ReadFile(filepath.Join(client.dataDir, "alloc", a.ID, "alloc", "logs", f))
				t.Logf("%s %s: %s", a.TaskGroup, f, b)
			}
			full, _, err := c.Allocations().Info(a.ID, nil)
			if err != nil {
				continue
			}
			for name, st := range full.TaskStates {
				for _, e := range st.Events {
					t.Logf("%s/%s %s: %s: %s", a.TaskGroup, name, st.State, e.Type, e.DisplayMessage)
				}
			}
		}
	})
	var logFailures, dirFailures []string
	require.Eventually(t, func() bool {
		logFailures, dirFailures = failures("logs", "main"), failures("taskdir", "swap")
		return len(logFailures) > 0 && len(dirFailures) > 0
	}, 90*time.Second, 250*time.Millisecond, "both starts are refused")

	t.Logf("logs/main: %s", logFailures[0])
	require.Contains(t, logFailures[0], "alloc/logs/main.stdout.0")
	require.Contains(t, logFailures[0], "resolves outside")
	require.Contains(t, logFailures[0], victim)
	require.NoFileExists(t, victim, "the main task's output never reaches the host file")

	t.Logf("taskdir/swap: %s", dirFailures[0])
	require.Contains(t, dirFailures[0], "swap/local")
	require.Contains(t, dirFailures[0], "leaves the task directory")
	fi, err := os.Stat(hostDir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	require.Equal(t, uint32(0), fi.Sys().(*syscall.Stat_t).Uid, "the host directory is not given to the task's user")
	entries, err := os.ReadDir(hostDir)
	require.NoError(t, err)
	require.Empty(t, entries)
	require.False(t, strings.Contains(logFailures[0]+dirFailures[0], "permission denied"), "refused by the check, not by chance")
}
