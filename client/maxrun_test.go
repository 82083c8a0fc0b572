package client

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/allocrunner"
	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/testutil/taskprocs"
)

// clientDescription returns the reported client description of alloc id.
func (s *fakeServer) clientDescription(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.allocs[id]; a != nil {
		return a.ClientDescription
	}
	return ""
}

// TestMaxRunDuration_KillsARawExecBatchTask: a batch allocation whose
// raw_exec task outlives its group's max_run_duration is killed by the
// client and reported complete, "allocation exceeded max_run_duration";
// its task process is gone.
func TestMaxRunDuration_KillsARawExecBatchTask(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.Plugins = map[string]map[string]any{"raw_exec": {"enabled": true}}
	c := startClient(t, cfg)
	waitRegistered(t, c)
	a := rawExecAlloc(c.NodeID(), time.Second, "/bin/sleep", "3600")
	a.Job.Type = ptr("batch")
	a.Job.TaskGroups[0].Tasks[0].ShutdownDelay = 0
	bound := 1500 * time.Millisecond
	a.Job.TaskGroups[0].MaxRunDuration = &bound
	began := time.Now()
	srv.upsertAlloc(a)

	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "running" }, waitFor, tick)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "complete" }, waitFor, tick)
	require.GreaterOrEqual(t, time.Since(began), bound, "not before the bound")
	require.Equal(t, allocrunner.DescMaxRunExceeded, srv.clientDescription(a.ID))
	st := srv.taskState(a.ID, "t")
	require.Equal(t, "dead", st.State)
	require.False(t, st.Failed)
	var reason string
	for _, e := range st.Events {
		if e.Type == taskrunner.EventMaxRunExceeded {
			reason = e.DisplayMessage
		}
	}
	require.Equal(t, "Allocation exceeded its max_run_duration of 1.5s", reason)
	require.Empty(t, taskprocs.Find(cfg.DataDir), "the task and its executor are gone")
}
