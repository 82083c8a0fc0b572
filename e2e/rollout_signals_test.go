package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// rolloutJob is job "web" (a system job over dc1 unless set otherwise)
// whose group "web" runs task "server": raw_exec running command under
// /bin/sh, with a restart policy that retries quickly, rolled out on task
// states (1s healthy, 20s deadline, 1m progress). Meta is the group's
// meta besides VERSION (rollout signals, canary rules).
type rolloutJob struct {
	Type        string   // "system" when empty; a "service" job runs two allocations
	Datacenters []string // ["dc1"] when empty
	MaxParallel int      // 1 when 0
	AutoRevert  bool
	Version     string
	Meta        map[string]string
	Command     string
}

// HCL is the job file.
func (j rolloutJob) HCL() string {
	typ, dcs, par := j.Type, j.Datacenters, j.MaxParallel
	if typ == "" {
		typ = "system"
	}
	if len(dcs) == 0 {
		dcs = []string{"dc1"}
	}
	if par == 0 {
		par = 1
	}
	count, revert := "", ""
	if typ == "service" {
		count = "count = 2"
	}
	if j.AutoRevert {
		revert = "auto_revert       = true"
	}
	quoted := make([]string, len(dcs))
	for i, dc := range dcs {
		quoted[i] = fmt.Sprintf("%q", dc)
	}
	meta := fmt.Sprintf("      VERSION = %q\n", j.Version)
	keys := make([]string, 0, len(j.Meta))
	for k := range j.Meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		meta += fmt.Sprintf("      %q = %q\n", k, j.Meta[k])
	}
	return fmt.Sprintf(`
job "web" {
  type        = %q
  datacenters = [%s]
  update {
    max_parallel      = %d
    health_check      = "task_states"
    min_healthy_time  = "1s"
    healthy_deadline  = "20s"
    progress_deadline = "1m"
    %s
  }
  group "web" {
    %s
    meta = {
%s    }
    restart {
      attempts = 8
      interval = "10m"
      delay    = "200ms"
      mode     = "fail"
    }
    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", %q]
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
`, typ, strings.Join(quoted, ", "), par, revert, count, meta, j.Command)
}

// signalsJobHCL is system job "web" rolled out one node at a time, with
// auto_revert. Its group meta carries the rollout signal conditions
// (drover.auto_pause_on, drover.auto_fail_on; "" for none); its task runs
// command.
func signalsJobHCL(version, pauseOn, failOn, command string) string {
	return signalsJobOf("system", version, pauseOn, failOn, command)
}

// signalsJobOf is signalsJobHCL for a job of type typ (a service job runs
// two allocations).
func signalsJobOf(typ, version, pauseOn, failOn, command string) string {
	meta := map[string]string{}
	if pauseOn != "" {
		meta["drover.auto_pause_on"] = pauseOn
	}
	if failOn != "" {
		meta["drover.auto_fail_on"] = failOn
	}
	return rolloutJob{Type: typ, AutoRevert: true, Version: version, Meta: meta, Command: command}.HCL()
}

// signalsCluster starts a server and clients client agents; run submits a
// job file with `job run`.
func signalsCluster(t *testing.T, clients int) (*agentProc, *api.Client, func(hcl string, args ...string) (int, string)) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	for i := 1; i <= clients; i++ {
		newClientAgent(t, fmt.Sprintf("client-%d", i), srv.httpHostPort())
	}
	waitReadyNodes(t, c, clients)
	run := func(hcl string, args ...string) (int, string) {
		return drover(t, srv.httpAddr(), append(append([]string{"job", "run"}, args...), writeJobFile(t, hcl))...)
	}
	return srv, c, run
}

// crashThriceCommand is a shell command whose first three runs (counted in
// a file shared by every allocation) exit 1 and later ones run.
func crashThriceCommand(t *testing.T) string {
	runs := filepath.Join(t.TempDir(), "runs")
	return fmt.Sprintf(`n=$(cat %[1]s 2>/dev/null || echo 0); echo $((n+1)) > %[1]s; [ "$n" -ge 3 ] || exit 1; exec sleep 3600`, runs)
}

// TestRolloutSignalsPauseResumeFail: a version whose task crashes three
// times before it runs is paused by drover.auto_pause_on = "restarts>2"
// after its first node, with the reason in the deployment's description;
// resuming does not pause it again on the same count, and the rollout
// completes. A version that crash-loops is failed by drover.auto_fail_on,
// paused or not, and auto-reverted.
func TestRolloutSignalsPauseResumeFail(t *testing.T) {
	srv, c, run := signalsCluster(t, 2)

	code, out := run(signalsJobHCL("0", "", "", "exec sleep 3600"))
	require.Equal(t, 0, code, out)
	waitDeployment(t, c, 0, "successful")

	// Version 1: the first three runs (over all nodes) exit 1, later ones
	// run. The first node's allocation restarts three times: paused.
	crashThrice := crashThriceCommand(t)
	code, out = run(signalsJobHCL("1", "restarts>2", "restarts>6", crashThrice), "-detach")
	require.Equal(t, 0, code, out)
	d := waitDeployment(t, c, 1, "paused")
	m := regexp.MustCompile(`^Deployment paused: restarts 3 > 2 in group "web" on nodes ([0-9a-f]{8})$`).FindStringSubmatch(d.StatusDescription)
	require.NotNil(t, m, d.StatusDescription)
	allocs, _, err := c.Deployments().Allocations(d.ID, nil)
	require.NoError(t, err)
	require.Len(t, allocs, 1, "paused after the first node: no second placement")
	require.True(t, strings.HasPrefix(allocs[0].NodeID, m[1]), "the description names the allocation's node %s: %s", allocs[0].NodeID, d.StatusDescription)
	code, out = drover(t, srv.httpAddr(), "deployment", "status", d.ID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, d.StatusDescription, "deployment status shows why")
	// The allocation turns healthy while paused; nothing else is placed.
	require.Eventually(t, func() bool {
		got, _, err := c.Deployments().Info(d.ID, nil)
		return err == nil && got.TaskGroups["web"].HealthyAllocs == 1
	}, 20*time.Second, 100*time.Millisecond)
	require.Equal(t, map[uint64]int{0: 1, 1: 1}, liveVersions(t, c))

	// Resume: the three restarts seen at resume do not pause it again; the
	// second node's allocation runs at once and the rollout completes.
	code, out = drover(t, srv.httpAddr(), "deployment", "resume", d.ID)
	require.Equal(t, 0, code, out)
	done := waitDeployment(t, c, 1, "successful")
	require.Equal(t, "Deployment completed successfully", done.StatusDescription)
	require.Equal(t, map[uint64]int{1: 2}, liveVersions(t, c))

	// Version 2 crash-loops: its first restart pauses it (restarts>0), and
	// auto_fail_on still fails the paused deployment on the third; then
	// auto_revert rolls back to version 1.
	code, out = run(signalsJobHCL("2", "restarts>0", "restarts>2", "exit 1"))
	require.Equal(t, 1, code, out)
	var failed string
	for _, ds := range mustDeployments(t, c) {
		if ds.JobVersion == 2 {
			require.Equal(t, "failed", ds.Status)
			failed = ds.StatusDescription
		}
	}
	require.Regexp(t, `^Deployment failed: restarts [3-9] > 2 in group "web" on nodes [0-9a-f]{8} - rolling back to job version 1$`, failed)
	require.Contains(t, out, failed, "job run shows why")
	waitDeployment(t, c, 3, "successful")
}

// TestRolloutSignalsServicePauseThenFail: a service deployment is paused
// by drover.auto_pause_on after its first replacement crash-looped, and
// `deployment fail` on the paused deployment fails it and auto-reverts.
func TestRolloutSignalsServicePauseThenFail(t *testing.T) {
	srv, c, run := signalsCluster(t, 1)
	code, out := run(signalsJobOf("service", "0", "", "", "exec sleep 3600"))
	require.Equal(t, 0, code, out)
	waitDeployment(t, c, 0, "successful")

	crashThrice := crashThriceCommand(t)
	code, out = run(signalsJobOf("service", "1", "restarts>2", "", crashThrice), "-detach")
	require.Equal(t, 0, code, out)
	d := waitDeployment(t, c, 1, "paused")
	require.Regexp(t, `^Deployment paused: restarts 3 > 2 in group "web" on nodes [0-9a-f]{8}$`, d.StatusDescription)
	allocs, _, err := c.Deployments().Allocations(d.ID, nil)
	require.NoError(t, err)
	require.Len(t, allocs, 1, "max_parallel = 1: paused after the first replacement")

	code, out = drover(t, srv.httpAddr(), "deployment", "fail", d.ID)
	require.Equal(t, 0, code, out)
	failed, _, err := c.Deployments().Info(d.ID, nil)
	require.NoError(t, err)
	require.Equal(t, "failed", failed.Status)
	require.Equal(t, "Deployment marked as failed - rolling back to job version 0", failed.StatusDescription)
	waitDeployment(t, c, 2, "successful")
	require.Equal(t, map[uint64]int{2: 2}, liveVersions(t, c))
}
