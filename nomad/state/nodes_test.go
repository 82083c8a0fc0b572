package state

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func TestUpsertNode(t *testing.T) {
	s := NewStateStore()
	n := testNode()
	n.SchedulingEligibility = ""
	require.NoError(t, s.UpsertNode(1, n))
	got, err := s.NodeByID(nil, n.ID)
	require.NoError(t, err)
	require.Equal(t, uint64(1), got.CreateIndex)
	require.Equal(t, structs.NodeSchedulingEligible, got.SchedulingEligibility)
	bySecret, err := s.NodeBySecretID(nil, n.SecretID)
	require.NoError(t, err)
	require.Equal(t, n.ID, bySecret.ID)

	// The operator drains it; a re-registration keeps the drain, the
	// create index and the secret.
	require.NoError(t, s.UpdateNodeDrain(2, n.ID, true, false, 50))
	re := n.Copy()
	re.SecretID = ""
	re.Drain = false
	re.SchedulingEligibility = structs.NodeSchedulingEligible
	re.Name = "renamed"
	require.NoError(t, s.UpsertNode(3, re))
	got, _ = s.NodeByID(nil, n.ID)
	require.Equal(t, "renamed", got.Name)
	require.True(t, got.Drain)
	require.Equal(t, structs.NodeSchedulingIneligible, got.SchedulingEligibility)
	require.Equal(t, n.SecretID, got.SecretID)
	require.Equal(t, uint64(1), got.CreateIndex)
	require.Equal(t, uint64(3), got.ModifyIndex)

	bad := n.Copy()
	bad.SecretID = "other"
	err = s.UpsertNode(4, bad)
	require.True(t, errors.Is(err, ErrConflict), "got %v", err)

	thief := testNode()
	thief.SecretID = n.SecretID
	err = s.UpsertNode(5, thief)
	require.True(t, errors.Is(err, ErrConflict), "got %v", err)
	require.Equal(t, uint64(3), s.Index(TableNodes), "rejected writes write nothing")
}

func TestNodeUpdates(t *testing.T) {
	s := NewStateStore()
	n := testNode()
	require.NoError(t, s.UpsertNode(1, n))

	ev := &structs.NodeEvent{Message: "down", Subsystem: "Cluster", Timestamp: time.Unix(5, 0)}
	require.NoError(t, s.UpdateNodeStatus(2, n.ID, structs.NodeStatusDown, 123, ev))
	got, _ := s.NodeByID(nil, n.ID)
	require.Equal(t, structs.NodeStatusDown, got.Status)
	require.Equal(t, int64(123), got.StatusUpdatedAt)
	require.Len(t, got.Events, 1)
	require.Equal(t, uint64(2), got.Events[0].CreateIndex)
	require.Zero(t, ev.CreateIndex, "caller's event not mutated")
	for i := 0; i < 15; i++ {
		require.NoError(t, s.UpdateNodeStatus(uint64(3+i), n.ID, structs.NodeStatusReady, 124, &structs.NodeEvent{Message: "x"}))
	}
	got, _ = s.NodeByID(nil, n.ID)
	require.Len(t, got.Events, maxNodeEvents)

	require.NoError(t, s.UpdateNodeEligibility(20, n.ID, structs.NodeSchedulingIneligible, 200))
	got, _ = s.NodeByID(nil, n.ID)
	require.Equal(t, structs.NodeSchedulingIneligible, got.SchedulingEligibility)

	require.NoError(t, s.UpdateNodeDrain(21, n.ID, true, false, 201))
	err := s.UpdateNodeEligibility(22, n.ID, structs.NodeSchedulingEligible, 202)
	require.True(t, errors.Is(err, ErrConflict), "got %v", err)
	require.NoError(t, s.UpdateNodeDrain(23, n.ID, false, false, 203))
	got, _ = s.NodeByID(nil, n.ID)
	require.False(t, got.Drain)
	require.Equal(t, structs.NodeSchedulingIneligible, got.SchedulingEligibility, "a completed drain leaves the node ineligible")
	require.NoError(t, s.UpdateNodeDrain(24, n.ID, false, true, 204))
	got, _ = s.NodeByID(nil, n.ID)
	require.Equal(t, structs.NodeSchedulingEligible, got.SchedulingEligibility)
	require.True(t, got.Ready())

	for name, fn := range map[string]func() error{
		"status":      func() error { return s.UpdateNodeStatus(30, "nope", structs.NodeStatusDown, 0, nil) },
		"eligibility": func() error { return s.UpdateNodeEligibility(30, "nope", structs.NodeSchedulingEligible, 0) },
		"drain":       func() error { return s.UpdateNodeDrain(30, "nope", true, false, 0) },
		"delete":      func() error { return s.DeleteNodes(30, []string{n.ID, "nope"}) },
	} {
		err := fn()
		require.True(t, errors.Is(err, ErrNotFound), "%s: got %v", name, err)
	}
	mustNode, _ := s.NodeByID(nil, n.ID)
	require.NotNil(t, mustNode, "failed delete deletes nothing")

	require.NoError(t, s.DeleteNodes(31, []string{n.ID}))
	got, _ = s.NodeByID(nil, n.ID)
	require.Nil(t, got)
	bySecret, _ := s.NodeBySecretID(nil, n.SecretID)
	require.Nil(t, bySecret)
}

func TestNodeLists(t *testing.T) {
	s := NewStateStore()
	ids := []string{
		"11111111-0000-0000-0000-000000000000",
		"11112222-0000-0000-0000-000000000000",
		"22221111-0000-0000-0000-000000000000",
	}
	for i, id := range []string{ids[2], ids[0], ids[1]} {
		n := testNode()
		n.ID = id
		require.NoError(t, s.UpsertNode(uint64(i+1), n))
	}
	all, err := s.Nodes(nil)
	require.NoError(t, err)
	require.Len(t, all, 3)
	for i, n := range all {
		require.Equal(t, ids[i], n.ID, "sorted by ID")
	}
	pre, err := s.NodesByIDPrefix(nil, "1111")
	require.NoError(t, err)
	require.Len(t, pre, 2)
	pre, err = s.NodesByIDPrefix(nil, "11112")
	require.NoError(t, err)
	require.Len(t, pre, 1)
	require.Equal(t, ids[1], pre[0].ID)
}

// TestNodeDrainMetadata: a drain records its strategy and a "draining"
// LastDrain with the operator's meta; the drainer's completion marks it
// "complete", an operator's cancel "canceled"; re-registration keeps both.
func TestNodeDrainMetadata(t *testing.T) {
	s := NewStateStore()
	n := testNode()
	require.NoError(t, s.UpsertNode(1, n))
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	meta := map[string]string{"reason": "kernel"}
	require.NoError(t, s.ApplyNodeDrain(2, &structs.NodeUpdateDrainRequest{NodeID: n.ID, Drain: true,
		Spec: structs.DrainSpec{Deadline: time.Minute}, Meta: meta, Time: t0}))
	got, _ := s.NodeByID(nil, n.ID)
	require.True(t, got.Drain)
	require.Equal(t, t0, got.DrainStrategy.StartedAt)
	require.Equal(t, t0.Add(time.Minute), got.DrainStrategy.ForceDeadline)
	require.Equal(t, &structs.DrainMetadata{StartedAt: t0, UpdatedAt: t0, Status: structs.DrainStatusDraining, Meta: meta}, got.LastDrain)

	re := n.Copy()
	re.Drain, re.DrainStrategy, re.LastDrain = false, nil, nil
	require.NoError(t, s.UpsertNode(3, re))
	got, _ = s.NodeByID(nil, n.ID)
	require.NotNil(t, got.DrainStrategy, "re-registration keeps the drain")
	require.NotNil(t, got.LastDrain)

	t1 := t0.Add(time.Second)
	require.NoError(t, s.ApplyNodeDrain(4, &structs.NodeUpdateDrainRequest{NodeID: n.ID, Complete: true, Time: t1}))
	got, _ = s.NodeByID(nil, n.ID)
	require.False(t, got.Drain)
	require.Nil(t, got.DrainStrategy)
	require.Equal(t, structs.NodeSchedulingIneligible, got.SchedulingEligibility)
	require.Equal(t, &structs.DrainMetadata{StartedAt: t0, UpdatedAt: t1, Status: structs.DrainStatusComplete, Meta: meta}, got.LastDrain)

	require.NoError(t, s.ApplyNodeDrain(5, &structs.NodeUpdateDrainRequest{NodeID: n.ID, Drain: true, Time: t1}))
	require.NoError(t, s.ApplyNodeDrain(6, &structs.NodeUpdateDrainRequest{NodeID: n.ID, MarkEligible: true, Time: t1.Add(time.Second)}))
	got, _ = s.NodeByID(nil, n.ID)
	require.Equal(t, structs.DrainStatusCanceled, got.LastDrain.Status)
	require.Equal(t, structs.NodeSchedulingEligible, got.SchedulingEligibility)
}

// TestNodeDrainDeadlineAndEvents: a deadline counts from when the drain is
// set, a forced drain (negative deadline) is due at once, and the drain's
// transitions leave Nomad's node events.
func TestNodeDrainDeadlineAndEvents(t *testing.T) {
	s := NewStateStore()
	n := testNode()
	require.NoError(t, s.UpsertNode(1, n))
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	drain := func(index uint64, at time.Time, spec structs.DrainSpec) *structs.Node {
		t.Helper()
		require.NoError(t, s.ApplyNodeDrain(index, &structs.NodeUpdateDrainRequest{NodeID: n.ID, Drain: true, Spec: spec, Time: at}))
		got, err := s.NodeByID(nil, n.ID)
		require.NoError(t, err)
		return got
	}
	got := drain(2, t0, structs.DrainSpec{Deadline: time.Hour})
	require.Equal(t, t0.Add(time.Hour), got.DrainStrategy.ForceDeadline)
	last := got.Events[len(got.Events)-1]
	require.Equal(t, structs.NodeEventDrainSet, last.Message)
	require.Equal(t, structs.NodeEventSubsystemDrain, last.Subsystem)
	require.Equal(t, uint64(2), last.CreateIndex)
	events := len(got.Events)

	got = drain(3, t0.Add(time.Minute), structs.DrainSpec{Deadline: -time.Second})
	require.Equal(t, t0.Add(time.Minute), got.DrainStrategy.ForceDeadline, "forced: due when set")
	require.Equal(t, t0, got.DrainStrategy.StartedAt, "an updated drain keeps its start")
	require.True(t, got.DrainStrategy.DeadlinePassed(t0.Add(time.Minute)))
	require.Len(t, got.Events, events, "an update adds no event")

	got = drain(4, t0.Add(2*time.Minute), structs.DrainSpec{})
	require.True(t, got.DrainStrategy.ForceDeadline.IsZero(), "no deadline")
	require.False(t, got.DrainStrategy.DeadlinePassed(t0.Add(1000*time.Hour)))

	require.NoError(t, s.ApplyNodeDrain(5, &structs.NodeUpdateDrainRequest{NodeID: n.ID, Complete: true, DeadlineReached: true, Time: t0.Add(3 * time.Minute)}))
	got, err := s.NodeByID(nil, n.ID)
	require.NoError(t, err)
	last = got.Events[len(got.Events)-1]
	require.Equal(t, structs.NodeEventDrainComplete, last.Message)
	require.Equal(t, map[string]string{"deadline_reached": "true"}, last.Details)

	drain(6, t0.Add(4*time.Minute), structs.DrainSpec{})
	require.NoError(t, s.ApplyNodeDrain(7, &structs.NodeUpdateDrainRequest{NodeID: n.ID, Time: t0.Add(5 * time.Minute)}))
	got, err = s.NodeByID(nil, n.ID)
	require.NoError(t, err)
	require.Equal(t, structs.NodeEventDrainDisabled, got.Events[len(got.Events)-1].Message)
	require.Equal(t, structs.DrainStatusCanceled, got.LastDrain.Status)
}
