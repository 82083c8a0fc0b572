package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// fakeState is an in-memory State. Tests and the harness's planner write it
// directly; reads return the stored pointers, which nobody mutates (writes
// replace them).
type fakeState struct {
	index       uint64
	jobs        map[structs.NamespacedID]*structs.Job
	versions    map[string]*structs.Job // "ns/id/version" → job version
	nodes       map[string]*structs.Node
	sortedNodes []*structs.Node // nodes by ID; nil after a node is added
	allocs      map[string]*structs.Allocation
	byNode      map[string][]string // node ID → alloc IDs
	deployments map[string]*structs.Deployment
}

func newFakeState() *fakeState {
	return &fakeState{
		index:       1,
		jobs:        map[structs.NamespacedID]*structs.Job{},
		versions:    map[string]*structs.Job{},
		nodes:       map[string]*structs.Node{},
		allocs:      map[string]*structs.Allocation{},
		byNode:      map[string][]string{},
		deployments: map[string]*structs.Deployment{},
	}
}

func versionKey(ns, id string, v uint64) string { return fmt.Sprintf("%s/%s/%d", ns, id, v) }

// upsertJob stores job as its current version (and as a stored version).
func (s *fakeState) upsertJob(job *structs.Job) {
	s.index++
	if job.CreateIndex == 0 {
		job.CreateIndex = s.index
	}
	job.ModifyIndex, job.JobModifyIndex = s.index, s.index
	s.jobs[job.NamespacedID()] = job
	s.versions[versionKey(job.Namespace, job.ID, job.Version)] = job
}

func (s *fakeState) deleteJob(job *structs.Job) {
	s.index++
	delete(s.jobs, job.NamespacedID())
}

func (s *fakeState) upsertNode(n *structs.Node) {
	s.index++
	s.nodes[n.ID] = n
	s.sortedNodes = nil
}

// upsertAlloc stores a, linking its Job to the stored version when nil.
func (s *fakeState) upsertAlloc(a *structs.Allocation) {
	if a.Job == nil {
		a.Job = s.versions[versionKey(a.Namespace, a.JobID, a.JobVersion)]
	}
	if old, ok := s.allocs[a.ID]; ok {
		a.CreateIndex = old.CreateIndex
	} else {
		a.CreateIndex = s.index
		s.byNode[a.NodeID] = append(s.byNode[a.NodeID], a.ID)
	}
	a.ModifyIndex = s.index
	s.allocs[a.ID] = a
}

func (s *fakeState) JobByID(_ memdb.WatchSet, ns, id string) (*structs.Job, error) {
	return s.jobs[structs.NamespacedID{Namespace: ns, ID: id}], nil
}

func (s *fakeState) Nodes(memdb.WatchSet) ([]*structs.Node, error) {
	// Sorted once per change of the node set, as the state store's index
	// keeps them: sorting on every read would be benchmark overhead that
	// the real store does not have.
	if s.sortedNodes == nil {
		s.sortedNodes = make([]*structs.Node, 0, len(s.nodes))
		for _, n := range s.nodes {
			s.sortedNodes = append(s.sortedNodes, n)
		}
		slices.SortFunc(s.sortedNodes, func(a, b *structs.Node) int { return cmp.Compare(a.ID, b.ID) })
	}
	return slices.Clone(s.sortedNodes), nil
}

func (s *fakeState) AllocsByJob(_ memdb.WatchSet, ns, jobID string, _ bool) ([]*structs.Allocation, error) {
	var out []*structs.Allocation
	for _, a := range s.allocs {
		if a.Namespace == ns && a.JobID == jobID {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b *structs.Allocation) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

func (s *fakeState) AllocsByNode(_ memdb.WatchSet, nodeID string) ([]*structs.Allocation, error) {
	ids := s.byNode[nodeID]
	out := make([]*structs.Allocation, 0, len(ids))
	for _, id := range ids {
		out = append(out, s.allocs[id])
	}
	return out, nil
}

func (s *fakeState) JobVersionsByID(_ memdb.WatchSet, ns, id string) ([]*structs.Job, error) {
	var out []*structs.Job
	for _, v := range s.versions {
		if v.Namespace == ns && v.ID == id {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version > out[j].Version })
	return out, nil
}

func (s *fakeState) LatestDeploymentByJobID(_ memdb.WatchSet, ns, jobID string) (*structs.Deployment, error) {
	var latest *structs.Deployment
	for _, d := range s.deployments {
		if d.Namespace == ns && d.JobID == jobID && (latest == nil || d.CreateIndex > latest.CreateIndex) {
			latest = d
		}
	}
	return latest, nil
}

func (s *fakeState) LatestIndex() uint64 { return s.index }

// liveAllocs returns the job's live allocations.
func (s *fakeState) liveAllocs(jobID string) []*structs.Allocation {
	all, _ := s.AllocsByJob(nil, structs.DefaultNamespace, jobID, true)
	var out []*structs.Allocation
	for _, a := range all {
		if !a.Terminal() {
			out = append(out, a)
		}
	}
	return out
}

// failer is the part of testing.TB (and of *rapid.T) the harness uses.
type failer interface {
	Helper()
	Fatalf(format string, args ...any)
}

// harness is a Planner that records plans and evaluations and applies
// plans to its fakeState, like the server's applier and FSM would. New
// allocations get CreateTime now.
type harness struct {
	t       failer
	state   *fakeState
	now     time.Time
	plans   []*structs.Plan
	evals   []*structs.Evaluation // UpdateEval calls
	created []*structs.Evaluation // CreateEval calls
	// rejectNodes makes the applier reject allocations on these nodes
	// (stops still commit), forcing a partial commit.
	rejectNodes map[string]bool
	// rejectOnce clears rejectNodes after the first rejecting plan.
	rejectOnce bool
}

func newHarness(t failer) *harness {
	return &harness{t: t, state: newFakeState(), now: time.Unix(1_700_000_000, 0)}
}

func (h *harness) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, State, error) {
	h.plans = append(h.plans, plan)
	h.state.index++
	result := &structs.PlanResult{
		NodeUpdate: plan.NodeUpdate, NodeAllocation: map[string][]*structs.Allocation{},
		Deployment: plan.Deployment, DeploymentUpdates: plan.DeploymentUpdates, AllocIndex: h.state.index,
	}
	for nodeID, allocs := range plan.NodeAllocation {
		if h.rejectNodes[nodeID] {
			result.RefreshIndex = h.state.index
			continue
		}
		result.NodeAllocation[nodeID] = allocs
	}
	h.apply(plan, result)
	if result.RefreshIndex != 0 && h.rejectOnce {
		h.rejectNodes = nil
	}
	if result.RefreshIndex != 0 {
		return result, h.state, nil
	}
	return result, nil, nil
}

// apply commits result as the state store's UpsertPlanResults does.
func (h *harness) apply(plan *structs.Plan, result *structs.PlanResult) {
	s := h.state
	for _, stops := range result.NodeUpdate {
		for _, stop := range stops {
			c := s.allocs[stop.ID].Copy()
			c.DesiredStatus, c.DesiredDescription = stop.DesiredStatus, stop.DesiredDescription
			switch stop.ClientStatus {
			case structs.AllocClientStatusLost, structs.AllocClientStatusUnknown:
				if c.ClientStatus != structs.AllocClientStatusUnknown || stop.ClientStatus != structs.AllocClientStatusUnknown {
					c.DisconnectedAt = h.now.UnixNano()
				}
				c.ClientStatus = stop.ClientStatus
			}
			s.upsertAlloc(c)
		}
	}
	for _, allocs := range result.NodeAllocation {
		for _, a := range allocs {
			c := a.Copy()
			if c.Job == nil {
				c.Job = plan.Job
			}
			if old, ok := s.allocs[c.ID]; ok {
				c.ClientStatus, c.CreateTime = old.ClientStatus, old.CreateTime
			} else {
				c.CreateTime = h.now.UnixNano()
			}
			s.upsertAlloc(c)
			if prev, ok := s.allocs[c.PreviousAllocation]; ok {
				p := prev.Copy()
				p.NextAllocation = c.ID
				s.upsertAlloc(p)
			}
		}
	}
	if d := result.Deployment; d != nil {
		c := d.Copy()
		if old, ok := s.deployments[c.ID]; ok {
			c.CreateIndex = old.CreateIndex
		} else {
			c.CreateIndex = s.index
		}
		s.deployments[c.ID] = c
	}
	for _, u := range result.DeploymentUpdates {
		if d, ok := s.deployments[u.DeploymentID]; ok {
			c := d.Copy()
			c.Status, c.StatusDescription = u.Status, u.StatusDescription
			s.deployments[c.ID] = c
		}
	}
}

func (h *harness) UpdateEval(eval *structs.Evaluation) error {
	h.evals = append(h.evals, eval)
	return nil
}

func (h *harness) CreateEval(eval *structs.Evaluation) error {
	h.created = append(h.created, eval)
	return nil
}

// process runs one evaluation of job (registration trigger) and returns the
// evaluation as the scheduler finished it.
func (h *harness) process(job *structs.Job) *structs.Evaluation {
	h.t.Helper()
	eval := &structs.Evaluation{
		ID: fmt.Sprintf("eval-%d", len(h.evals)+1), Namespace: job.Namespace, JobID: job.ID,
		Type: job.Type, Priority: job.Priority, TriggeredBy: structs.EvalTriggerJobRegister,
		Status: structs.EvalStatusPending,
	}
	sched, err := New(job.Type, hclog.NewNullLogger(), h.state, h, func() time.Time { return h.now })
	if err != nil {
		h.t.Fatalf("new scheduler: %v", err)
	}
	if err := sched.Process(eval); err != nil {
		h.t.Fatalf("process eval: %v", err)
	}
	if len(h.evals) == 0 || h.evals[len(h.evals)-1].ID != eval.ID {
		h.t.Fatalf("eval %s was not updated", eval.ID)
	}
	return h.evals[len(h.evals)-1]
}

// lastPlan returns the newest submitted plan, failing when there is none.
func (h *harness) lastPlan() *structs.Plan {
	h.t.Helper()
	if len(h.plans) == 0 {
		h.t.Fatalf("no plan submitted")
	}
	return h.plans[len(h.plans)-1]
}

// Fixtures.

type nodeOpt func(*structs.Node)

// testNode returns a ready node named (and identified by) name in dc1 with
// room for many allocations and raw_exec and docker drivers.
func testNode(name string, opts ...nodeOpt) *structs.Node {
	n := &structs.Node{
		ID: name, Name: name, Datacenter: "dc1", NodePool: "default",
		Status: structs.NodeStatusReady, SchedulingEligibility: structs.NodeSchedulingEligible,
		Attributes: map[string]string{"kernel.name": "linux"},
		NodeResources: structs.NodeResources{
			Cpu:    structs.NodeCpuResources{CpuShares: 4000},
			Memory: structs.NodeMemoryResources{MemoryMB: 8192},
			Disk:   structs.NodeDiskResources{DiskMB: 100_000},
		},
		Drivers: map[string]*structs.DriverInfo{
			"raw_exec": {Detected: true, Healthy: true},
			"docker":   {Detected: true, Healthy: true},
		},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func down(n *structs.Node)         { n.Status = structs.NodeStatusDown }
func disconnected(n *structs.Node) { n.Status = structs.NodeStatusDisconnected }
func draining(n *structs.Node) {
	n.Drain, n.SchedulingEligibility = true, structs.NodeSchedulingIneligible
}
func ineligible(n *structs.Node) { n.SchedulingEligibility = structs.NodeSchedulingIneligible }
func inDC(dc string) nodeOpt     { return func(n *structs.Node) { n.Datacenter = dc } }
func inPool(p string) nodeOpt    { return func(n *structs.Node) { n.NodePool = p } }
func withAttr(k, v string) nodeOpt {
	return func(n *structs.Node) {
		attrs := map[string]string{}
		for ak, av := range n.Attributes {
			attrs[ak] = av
		}
		attrs[k] = v
		n.Attributes = attrs
	}
}

// testJob returns a canonical-looking system job with one group "web" of
// one raw_exec task and no update block.
func testJob(id string) *structs.Job {
	return &structs.Job{
		Namespace: structs.DefaultNamespace, ID: id, Name: id, Type: structs.JobTypeSystem,
		Priority: 50, Datacenters: []string{"dc1"}, NodePool: "default", Status: structs.JobStatusPending,
		TaskGroups: []*structs.TaskGroup{{
			Name: "web", Count: 1,
			EphemeralDisk: &structs.EphemeralDisk{SizeMB: 300},
			Tasks: []*structs.Task{{
				Name: "server", Driver: "raw_exec",
				Config:    map[string]any{"command": "/bin/sleep", "args": []string{"3600"}},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64},
			}},
		}},
	}
}

// withUpdate gives every group of job an update block (a deployment).
func withUpdate(job *structs.Job) *structs.Job {
	for _, tg := range job.TaskGroups {
		tg.Update = &structs.UpdateStrategy{MaxParallel: 1, HealthCheck: structs.UpdateHealthCheckTaskStates,
			MinHealthyTime: time.Second, HealthyDeadline: time.Minute, ProgressDeadline: 10 * time.Minute, AutoRevert: true}
	}
	return job
}

// nextVersion returns a copy of job at the next version with its first
// group changed by mutate.
func nextVersion(job *structs.Job, mutate func(tg *structs.TaskGroup)) *structs.Job {
	c := job.Copy()
	c.Version++
	tg := *c.TaskGroups[0]
	tg.Tasks = make([]*structs.Task, len(tg.Tasks))
	for i, t := range c.TaskGroups[0].Tasks {
		tc := *t
		tg.Tasks[i] = &tc
	}
	mutate(&tg)
	c.TaskGroups[0] = &tg
	return c
}

// destructiveChange changes the task's config (a replacement).
func destructiveChange(tg *structs.TaskGroup) {
	tg.Tasks[0].Config = map[string]any{"command": "/bin/sleep", "args": []string{"7200"}}
}

// inplaceChange changes the group's meta (an in-place update).
func inplaceChange(tg *structs.TaskGroup) { tg.Meta = map[string]string{"changed": "yes"} }

// testAlloc returns a running allocation of job's group "web" on node.
func testAlloc(id string, job *structs.Job, nodeID string) *structs.Allocation {
	return &structs.Allocation{
		ID: id, Namespace: job.Namespace, Name: job.ID + ".web[0]", NodeID: nodeID, NodeName: nodeID,
		JobID: job.ID, JobVersion: job.Version, Job: job, TaskGroup: "web",
		AllocatedResources: &structs.AllocatedResources{
			Tasks: map[string]*structs.AllocatedTaskResources{"server": {
				Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: 64}}},
			Shared: structs.AllocatedSharedResources{DiskMB: 300},
		},
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
	}
}

func withClientStatus(a *structs.Allocation, status string) *structs.Allocation {
	a.ClientStatus = status
	return a
}

func withDesiredStop(a *structs.Allocation) *structs.Allocation {
	a.DesiredStatus = structs.AllocDesiredStatusStop
	return a
}
