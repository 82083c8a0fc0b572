package planner

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/nomad/structs"
)

// ErrQueueDisabled is returned for plans submitted while this server is not
// the leader.
var ErrQueueDisabled = errors.New("planner: plan queue is disabled")

// Committer commits an accepted plan through raft and returns its index.
type Committer func(req *structs.ApplyPlanResultsRequest) (index uint64, err error)

// SnapshotFunc returns the newest state to check plans against.
type SnapshotFunc func() Snapshot

// Queue orders submitted plans by priority (then arrival) and applies them one
// at a time.
type Queue struct {
	logger   hclog.Logger
	snapshot SnapshotFunc
	commit   Committer
	now      func() int64

	mu      sync.Mutex
	enabled bool
	pending planHeap
	seq     uint64
	wake    chan struct{}
}

// NewQueue returns a disabled queue; Run enables it.
func NewQueue(logger hclog.Logger, snapshot SnapshotFunc, commit Committer, nowNanos func() int64) *Queue {
	return &Queue{logger: logger.Named("plan_queue"), snapshot: snapshot, commit: commit, now: nowNanos, wake: make(chan struct{}, 1)}
}

type pendingPlan struct {
	plan  *structs.Plan
	seq   uint64
	reply chan planReply
}

type planReply struct {
	result *structs.PlanResult
	err    error
}

// Submit queues plan and waits for its result.
func (q *Queue) Submit(ctx context.Context, plan *structs.Plan) (*structs.PlanResult, error) {
	q.mu.Lock()
	if !q.enabled {
		q.mu.Unlock()
		return nil, ErrQueueDisabled
	}
	q.seq++
	p := &pendingPlan{plan: plan, seq: q.seq, reply: make(chan planReply, 1)}
	heap.Push(&q.pending, p)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	select {
	case r := <-p.reply:
		return r.result, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Run applies plans until ctx is done, then fails the plans still queued.
func (q *Queue) Run(ctx context.Context) {
	q.mu.Lock()
	q.enabled = true
	q.mu.Unlock()
	defer q.disable()
	for {
		p := q.pop()
		if p == nil {
			select {
			case <-ctx.Done():
				return
			case <-q.wake:
				continue
			}
		}
		result, err := q.apply(p.plan)
		p.reply <- planReply{result: result, err: err}
	}
}

func (q *Queue) pop() *pendingPlan {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending.Len() == 0 {
		return nil
	}
	return heap.Pop(&q.pending).(*pendingPlan)
}

func (q *Queue) disable() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.enabled = false
	for q.pending.Len() > 0 {
		p := heap.Pop(&q.pending).(*pendingPlan)
		p.reply <- planReply{err: ErrQueueDisabled}
	}
}

// apply checks plan against the newest state and commits what holds.
func (q *Queue) apply(plan *structs.Plan) (*structs.PlanResult, error) {
	result, rejected, err := EvaluatePlan(q.snapshot(), plan)
	if err != nil {
		return nil, fmt.Errorf("planner: evaluate plan of eval %s: %w", plan.EvalID, err)
	}
	for _, r := range rejected {
		q.logger.Debug("plan rejected on node", "eval_id", plan.EvalID, "node_id", r.NodeID, "reason", r.Reason)
	}
	req := &structs.ApplyPlanResultsRequest{
		Job:               plan.Job,
		Deployment:        result.Deployment,
		DeploymentUpdates: result.DeploymentUpdates,
		EvalID:            plan.EvalID,
		UpdatedAt:         q.now(),
	}
	for _, ids := range sortedKeys(result.NodeUpdate) {
		req.AllocsStopped = append(req.AllocsStopped, result.NodeUpdate[ids]...)
	}
	for _, ids := range sortedKeys(result.NodeAllocation) {
		req.AllocsUpdated = append(req.AllocsUpdated, result.NodeAllocation[ids]...)
	}
	if len(req.AllocsStopped) == 0 && len(req.AllocsUpdated) == 0 && req.Deployment == nil && len(req.DeploymentUpdates) == 0 {
		return result, nil
	}
	index, err := q.commit(req)
	if err != nil {
		return nil, fmt.Errorf("planner: commit plan of eval %s: %w", plan.EvalID, err)
	}
	result.AllocIndex = index
	return result, nil
}

func sortedKeys(m map[string][]*structs.Allocation) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// planHeap orders plans by priority descending, then submission order.
type planHeap []*pendingPlan

func (h planHeap) Len() int { return len(h) }
func (h planHeap) Less(i, j int) bool {
	if h[i].plan.Priority != h[j].plan.Priority {
		return h[i].plan.Priority > h[j].plan.Priority
	}
	return h[i].seq < h[j].seq
}
func (h planHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *planHeap) Push(x any)   { *h = append(*h, x.(*pendingPlan)) }
func (h *planHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	*h = old[:len(old)-1]
	return p
}
