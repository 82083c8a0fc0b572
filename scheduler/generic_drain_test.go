package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// drainWithDeadline starts draining node id of h with a deadline at
// deadline.
func drainWithDeadline(h *harness, id string, deadline time.Time) {
	n := h.state.nodes[id].Copy()
	draining(n)
	n.DrainStrategy = &structs.DrainStrategy{ForceDeadline: deadline, StartedAt: h.now}
	h.state.upsertNode(n)
}

func TestGeneric_DrainLeavesBatchUntilDeadline(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("node-a"))
	job := batchJob("report", 2)
	h.state.upsertJob(job)
	h.process(job)
	h.state.upsertNode(testNode("node-b"))
	drainWithDeadline(h, "node-a", h.now.Add(time.Hour))

	eval := h.process(job)
	assert.Zero(t, eval.PlanAnnotations.DesiredTGUpdates["web"].Migrate)
	assert.Equal(t, map[string]int{"node-a": 2}, liveByNode(h, "report"), "batch work runs on until the deadline")

	h.now = h.now.Add(time.Hour)
	eval = h.process(job)
	assert.Equal(t, uint64(2), eval.PlanAnnotations.DesiredTGUpdates["web"].Migrate)
	assert.Equal(t, map[string]int{"node-b": 2}, liveByNode(h, "report"))
}

func TestGeneric_DrainWithoutDeadlineLeavesBatchToFinish(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("node-a"))
	job := batchJob("report", 1)
	h.state.upsertJob(job)
	h.process(job)
	h.state.upsertNode(testNode("node-b"))
	drainWithDeadline(h, "node-a", time.Time{})
	h.now = h.now.Add(1000 * time.Hour)
	h.process(job)
	assert.Equal(t, map[string]int{"node-a": 1}, liveByNode(h, "report"))
}

// TestGeneric_DrainDeadlineMigratesEverythingAtOnce: past the deadline,
// migrate.max_parallel no longer holds migrations back.
func TestGeneric_DrainDeadlineMigratesEverythingAtOnce(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("node-a"))
	job := serviceJob("web", 3)
	job.TaskGroups[0].Migrate = &structs.MigrateStrategy{MaxParallel: 1}
	h.state.upsertJob(job)
	h.process(job)
	h.state.upsertNode(testNode("node-b"))
	drainWithDeadline(h, "node-a", h.now.Add(time.Minute))

	eval := h.process(job)
	assert.Equal(t, uint64(1), eval.PlanAnnotations.DesiredTGUpdates["web"].Migrate)
	assert.Equal(t, map[string]int{"node-a": 2, "node-b": 1}, liveByNode(h, "web"))

	h.now = h.now.Add(time.Minute)
	eval = h.process(job)
	assert.Equal(t, uint64(2), eval.PlanAnnotations.DesiredTGUpdates["web"].Migrate)
	assert.Equal(t, map[string]int{"node-b": 3}, liveByNode(h, "web"))
}

// TestGeneric_DrainDeadlineStopsEvenWithoutRoom: past the deadline an
// allocation leaves its node even when no other node takes it; the
// placement failure is reported.
func TestGeneric_DrainDeadlineStopsEvenWithoutRoom(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("node-a"))
	job := serviceJob("web", 1)
	h.state.upsertJob(job)
	h.process(job)

	drainWithDeadline(h, "node-a", h.now.Add(time.Minute))
	eval := h.process(job)
	assert.Equal(t, map[string]int{"node-a": 1}, liveByNode(h, "web"), "before the deadline it waits for room")

	h.now = h.now.Add(time.Minute)
	eval = h.process(job)
	assert.Empty(t, liveByNode(h, "web"))
	require.Contains(t, eval.FailedTGAllocs, "web")
	stops := h.lastPlan().NodeUpdate["node-a"]
	require.Len(t, stops, 1)
	assert.Equal(t, DescMigrating, stops[0].DesiredDescription)
}
