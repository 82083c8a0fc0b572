package planner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func TestQueueAppliesInPriorityOrderAndCommits(t *testing.T) {
	snap := snapshotOf([]*structs.Node{node("n1"), node("n2")})
	var mu sync.Mutex
	var committed []string
	gate := make(chan struct{})
	commit := func(req *structs.ApplyPlanResultsRequest) (uint64, error) {
		<-gate
		mu.Lock()
		defer mu.Unlock()
		committed = append(committed, req.EvalID)
		return uint64(100 + len(committed)), nil
	}
	q := NewQueue(hclog.NewNullLogger(), func() Snapshot { return snap }, commit, func() int64 { return 1 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.Run(ctx)
	require.Eventually(t, func() bool { q.mu.Lock(); defer q.mu.Unlock(); return q.enabled }, time.Second, time.Millisecond)

	submit := func(evalID string, prio int, nodeID string) chan *structs.PlanResult {
		out := make(chan *structs.PlanResult, 1)
		plan := &structs.Plan{EvalID: evalID, Priority: prio}
		plan.AppendAlloc(alloc(evalID+"-a", nodeID, evalID, 10))
		go func() {
			r, err := q.Submit(ctx, plan)
			require.NoError(t, err)
			out <- r
		}()
		return out
	}
	first := submit("first", 50, "n1")
	// Wait until the applier holds "first" at the gate, then queue two more.
	require.Eventually(t, func() bool { q.mu.Lock(); defer q.mu.Unlock(); return q.pending.Len() == 0 && q.seq == 1 }, time.Second, time.Millisecond)
	low := submit("low", 10, "n2")
	require.Eventually(t, func() bool { q.mu.Lock(); defer q.mu.Unlock(); return q.pending.Len() == 1 }, time.Second, time.Millisecond)
	high := submit("high", 90, "n2")
	require.Eventually(t, func() bool { q.mu.Lock(); defer q.mu.Unlock(); return q.pending.Len() == 2 }, time.Second, time.Millisecond)
	close(gate)
	for _, ch := range []chan *structs.PlanResult{first, high, low} {
		r := <-ch
		require.NotZero(t, r.AllocIndex)
	}
	require.Equal(t, []string{"first", "high", "low"}, committed)
}

func TestQueueRefusesPlansWhenDisabled(t *testing.T) {
	q := NewQueue(hclog.NewNullLogger(), func() Snapshot { return snapshotOf(nil) },
		func(*structs.ApplyPlanResultsRequest) (uint64, error) { return 1, nil }, func() int64 { return 1 })
	_, err := q.Submit(context.Background(), &structs.Plan{})
	require.ErrorIs(t, err, ErrQueueDisabled)
}
