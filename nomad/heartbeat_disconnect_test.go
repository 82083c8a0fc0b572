package nomad

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/drover-project/drover/nomad/structs"
)

// TestDisconnectWindow: a node that misses its heartbeat stays
// disconnected (its allocations unknown) for the longest lost_after of its
// live allocations' groups; without one it is down at once (its
// allocations lost).
func TestDisconnectWindow(t *testing.T) {
	minute, hour := time.Minute, time.Hour
	job := &structs.Job{ID: "web", TaskGroups: []*structs.TaskGroup{
		{Name: "plain"},
		{Name: "short", Disconnect: &structs.DisconnectStrategy{LostAfter: &minute}},
		{Name: "older", MaxClientDisconnect: &hour},
		{Name: "stopper", Disconnect: &structs.DisconnectStrategy{StopOnClientAfter: &hour}},
	}}
	alloc := func(group string, desired, client string) *structs.Allocation {
		return &structs.Allocation{TaskGroup: group, Job: job, DesiredStatus: desired, ClientStatus: client}
	}
	const run, stop, running, lost = structs.AllocDesiredStatusRun, structs.AllocDesiredStatusStop,
		structs.AllocClientStatusRunning, structs.AllocClientStatusLost
	cases := []struct {
		name   string
		allocs []*structs.Allocation
		want   time.Duration
	}{
		{"no allocations: down", nil, 0},
		{"no disconnect block: down", []*structs.Allocation{alloc("plain", run, running)}, 0},
		{"stop_on_client_after only: down", []*structs.Allocation{alloc("stopper", run, running)}, 0},
		{"lost_after: disconnected that long", []*structs.Allocation{alloc("plain", run, running), alloc("short", run, running)}, minute},
		{"the longest window wins; max_client_disconnect counts", []*structs.Allocation{alloc("short", run, running), alloc("older", run, running)}, hour},
		{"terminal allocations do not count", []*structs.Allocation{alloc("older", stop, running), alloc("older", run, lost),
			alloc("short", run, running)}, minute},
		{"an allocation without its job does not count", []*structs.Allocation{{TaskGroup: "short", DesiredStatus: run}}, 0},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, disconnectWindow(tc.allocs), tc.name)
	}
}

// TestReconnects: a client update of an unknown allocation that reports
// any other status asks for a reconnect evaluation.
func TestReconnects(t *testing.T) {
	unknown := &structs.Allocation{ClientStatus: structs.AllocClientStatusUnknown}
	running := &structs.Allocation{ClientStatus: structs.AllocClientStatusRunning}
	assert.True(t, reconnects(unknown, running))
	assert.False(t, reconnects(unknown, &structs.Allocation{ClientStatus: structs.AllocClientStatusUnknown}))
	assert.False(t, reconnects(unknown, &structs.Allocation{}), "an update without a status")
	assert.False(t, reconnects(running, running), "was not unknown")
}
