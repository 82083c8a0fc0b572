package client

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad/structs"
)

func alloc(id string, modify uint64, desired, client string) *structs.Allocation {
	return &structs.Allocation{ID: id, AllocModifyIndex: modify, DesiredStatus: desired, ClientStatus: client}
}

func ids(as []*structs.Allocation) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

func apiIDs(as []*api.Allocation) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

func TestComputeAllocDiff(t *testing.T) {
	type want struct{ added, ignored, updated, removed []string }
	cases := []struct {
		name     string
		known    map[string]uint64
		incoming []*structs.Allocation
		keep     []string
		want     want
	}{
		{
			name:     "first sync starts what runs and remembers what is over",
			incoming: []*structs.Allocation{alloc("a", 5, "run", "pending"), alloc("b", 6, "stop", "running"), alloc("c", 7, "run", "complete")},
			want:     want{added: []string{"a"}, ignored: []string{"b", "c"}},
		},
		{
			name:     "unchanged and older indexes are left alone",
			known:    map[string]uint64{"a": 5, "b": 9},
			incoming: []*structs.Allocation{alloc("a", 5, "run", "running"), alloc("b", 8, "run", "running")},
		},
		{
			name:     "a newer AllocModifyIndex is an update, stop included",
			known:    map[string]uint64{"a": 5, "b": 5},
			incoming: []*structs.Allocation{alloc("a", 6, "stop", "running"), alloc("b", 5, "run", "running")},
			want:     want{updated: []string{"a"}},
		},
		{
			name:     "allocations gone from the list are removed, sorted",
			known:    map[string]uint64{"z": 1, "a": 2, "m": 3},
			incoming: []*structs.Allocation{alloc("m", 3, "run", "running")},
			want:     want{removed: []string{"a", "z"}},
		},
		{
			name:     "undecodable allocations are neither added nor removed",
			known:    map[string]uint64{"bad": 1},
			incoming: []*structs.Allocation{alloc("new", 2, "run", "pending")},
			keep:     []string{"bad", "bad-new"},
			want:     want{added: []string{"new"}},
		},
		{
			name:     "a duplicate in the list counts once",
			incoming: []*structs.Allocation{alloc("a", 1, "run", "pending"), alloc("a", 1, "run", "pending")},
			want:     want{added: []string{"a"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := computeAllocDiff(tc.known, tc.incoming, tc.keep)
			norm := func(s []string) []string {
				if s == nil {
					return []string{}
				}
				return s
			}
			require.Equal(t, norm(tc.want.added), ids(d.added), "added")
			require.Equal(t, norm(tc.want.ignored), ids(d.ignored), "ignored")
			require.Equal(t, norm(tc.want.updated), ids(d.updated), "updated")
			require.Equal(t, norm(tc.want.removed), norm(d.removed), "removed")
		})
	}
}

func TestHeartbeatDelay(t *testing.T) {
	require.Equal(t, 5*time.Second, heartbeatDelay(10*time.Second, 0))
	require.Equal(t, 4*time.Second, heartbeatDelay(10*time.Second, 1))
	for _, j := range []float64{0.1, 0.5, 0.99} {
		d := heartbeatDelay(200*time.Millisecond, j)
		require.Greater(t, d, 80*time.Millisecond)
		require.LessOrEqual(t, d, 100*time.Millisecond)
	}
}

func TestBackoff(t *testing.T) {
	require.Equal(t, 100*time.Millisecond, backoff(100*time.Millisecond, time.Second, 1))
	require.Equal(t, 400*time.Millisecond, backoff(100*time.Millisecond, time.Second, 3))
	require.Equal(t, time.Second, backoff(100*time.Millisecond, time.Second, 50))
}

func TestPendingUpdates_CoalesceAndRequeue(t *testing.T) {
	p := newPendingUpdates()
	p.add(&structs.Allocation{ID: "b", ClientStatus: "pending"})
	p.add(&structs.Allocation{ID: "a", ClientStatus: "running"})
	p.add(&structs.Allocation{ID: "b", ClientStatus: "running"})
	require.Len(t, p.kick, 1, "one wake-up however many adds")

	b := p.take()
	require.Equal(t, []string{"a", "b"}, apiIDs(b))
	require.Equal(t, "running", b[1].ClientStatus, "the latest update wins")
	require.Zero(t, p.len())

	// The send failed; meanwhile b moved on, and a was collected.
	p.add(&structs.Allocation{ID: "b", ClientStatus: "complete"})
	n := p.requeue(b, func(id string) bool { return id != "a" })
	require.Zero(t, n, "a is dropped, b is superseded")
	again := p.take()
	require.Equal(t, []string{"b"}, apiIDs(again))
	require.Equal(t, "complete", again[0].ClientStatus)

	require.Equal(t, 1, p.requeue(again, nil))
	require.Equal(t, 1, p.len())
}

func TestStartOffset(t *testing.T) {
	require.Equal(t, int64(0), startOffset("start", 0, 100))
	require.Equal(t, int64(10), startOffset("start", 10, 100))
	require.Equal(t, int64(100), startOffset("start", 500, 100))
	require.Equal(t, int64(95), startOffset("end", 5, 100))
	require.Equal(t, int64(0), startOffset("end", 500, 100))
}

func TestRelLogName(t *testing.T) {
	require.Equal(t, "alloc/logs/web.stdout.0", relLogName("/d/alloc", "a1", "/d/alloc/a1/alloc/logs/web.stdout.0"))
	require.Equal(t, "web.stdout.0", relLogName("/d/alloc", "a1", "/elsewhere/web.stdout.0"))
}

func TestFinalStatus(t *testing.T) {
	a := &structs.Allocation{ID: "a", TaskGroup: "g", Job: &structs.Job{TaskGroups: []*structs.TaskGroup{{
		Name: "g", Tasks: []*structs.Task{{Name: "t1"}, {Name: "t2"}},
	}}}}
	dead := &structs.TaskState{State: "dead"}
	_, ok := finalStatus(a, map[string]*structs.TaskState{"t1": dead})
	require.False(t, ok, "t2 never ran")
	_, ok = finalStatus(a, map[string]*structs.TaskState{"t1": dead, "t2": {State: "running"}})
	require.False(t, ok)
	u, ok := finalStatus(a, map[string]*structs.TaskState{"t1": dead, "t2": dead})
	require.True(t, ok)
	require.Equal(t, "complete", u.ClientStatus)
	u, _ = finalStatus(a, map[string]*structs.TaskState{"t1": dead, "t2": {State: "dead", Failed: true}})
	require.Equal(t, "failed", u.ClientStatus)
}

func TestAllocFromAPI(t *testing.T) {
	a := mockAlloc("node", map[string]any{"run_for": "1s", "exit_code": 2})
	a.AllocModifyIndex = 42
	a.PreviousAllocation = "prev"
	healthy := true
	a.DeploymentStatus = &api.AllocDeploymentStatus{Healthy: &healthy, Canary: true}
	got, err := allocFromAPI(a)
	require.NoError(t, err)
	require.Equal(t, a.ID, got.ID)
	require.EqualValues(t, 42, got.AllocModifyIndex)
	require.Equal(t, "prev", got.PreviousAllocation)
	require.True(t, got.DeploymentStatus.IsHealthy())
	require.Equal(t, "sysbatch", got.Job.Type)
	task := got.Job.LookupTaskGroup("g").LookupTask("t")
	require.Equal(t, "mock", task.Driver)
	require.Equal(t, "1s", task.Config["run_for"])

	_, err = allocFromAPI(&api.Allocation{ID: "x"})
	require.ErrorContains(t, err, "has no job")
	bad := mockAlloc("node", nil)
	bad.TaskGroup = "other"
	_, err = allocFromAPI(bad)
	require.ErrorContains(t, err, `no task group "other"`)
}

func TestAllocUpdateToAPI(t *testing.T) {
	u := apiconv.AllocUpdateToAPI(&structs.Allocation{ID: "a", JobID: "not sent", ClientStatus: "running", ClientDescription: "Tasks are running",
		TaskStates: map[string]*structs.TaskState{"t": {State: "running", Events: []*structs.TaskEvent{{Type: "Started"}}}}})
	require.Equal(t, "a", u.ID)
	require.Empty(t, u.JobID)
	require.Nil(t, u.Job)
	require.Equal(t, "running", u.ClientStatus)
	require.Equal(t, "Started", u.TaskStates["t"].Events[0].Type)
}

func TestFormatWait(t *testing.T) {
	require.Equal(t, "300s", formatWait(300*time.Second))
	require.Equal(t, "1500ms", formatWait(1500*time.Millisecond))
}

func TestReservedResources(t *testing.T) {
	r, err := reservedResources(map[string]string{"reserved.cpu": "500", "reserved.memory": "1024"})
	require.NoError(t, err)
	require.EqualValues(t, 500, r.Cpu.CpuShares)
	require.EqualValues(t, 1024, r.Memory.MemoryMB)
	_, err = reservedResources(map[string]string{"reserved.cpu": "-1", "reserved.memory": "x"})
	require.Error(t, err)
	require.ErrorContains(t, err, `"reserved.cpu"`)
	require.ErrorContains(t, err, `"reserved.memory"`)
}

func TestComputeStopHolds(t *testing.T) {
	withPrev := func(id, prev, desired string) *structs.Allocation {
		a := alloc(id, 1, desired, "pending")
		a.PreviousAllocation = prev
		return a
	}
	runners := map[string]bool{"r1": true, "r2": true, "r3": true}
	holds := computeStopHolds([]*structs.Allocation{
		alloc("old1", 2, "stop", "running"),
		withPrev("r1", "old1", "run"),  // holds old1
		withPrev("r2", "old2", "stop"), // the replacement itself is stopped: no hold
		withPrev("r3", "", "run"),      // replaces nothing
		withPrev("r4", "old4", "run"),  // no runner here (could not be built)
	}, func(id string) bool { return runners[id] })
	require.Equal(t, map[string]bool{"old1": true}, holds)
}

func TestPendingUpdates_HealthVerdictIsMarkedForAnImmediateFlush(t *testing.T) {
	p := newPendingUpdates()
	p.addAPI(&api.Allocation{ID: "a1", ClientStatus: "running"})
	require.False(t, p.takeHealth(), "a status change waits for the flush interval")
	healthy := true
	p.addAPI(&api.Allocation{ID: "a1", ClientStatus: "running", DeploymentStatus: &api.AllocDeploymentStatus{Healthy: &healthy}})
	require.True(t, p.takeHealth(), "a health verdict is flushed at once")
	require.False(t, p.takeHealth(), "the mark is cleared by taking it")
	require.Len(t, p.take(), 1)
}

// A list of the node's allocations older than the one applied (a stale
// read of a server behind: the chaos suite saw a resumed server answer at
// index 28 after the client had applied 57, and the client collected a
// live allocation and then ran it again) is refused, unless the node
// registered again since (servers that lost it start their indexes over).
func TestBehindVerdictRegisteredAgain(t *testing.T) {
	cases := []struct {
		name                       string
		had, got, regsHad, regsNow uint64
		want                       bool
	}{
		{"first list", 0, 12, 0, 1, true},
		{"newer list", 57, 60, 1, 1, true},
		{"same index (wait ended)", 57, 57, 1, 1, true},
		{"server behind", 57, 28, 1, 1, false},
		{"server behind, node registered again", 57, 3, 1, 2, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, _ := behindVerdict(c.had, c.got, c.regsNow != c.regsHad, time.Time{}, time.Now(), time.Hour); got != c.want {
				t.Fatalf("behindVerdict(%d, %d, registered again %v) = %v, want %v", c.had, c.got, c.regsNow != c.regsHad, got, c.want)
			}
		})
	}
}
