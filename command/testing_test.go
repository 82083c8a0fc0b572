package command

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// fakeServer answers the /v1 paths the CLI uses, from in-memory maps, with
// X-Nomad-Index headers and blocking-query semantics on deployment reads.
type fakeServer struct {
	t   *testing.T
	srv *httptest.Server

	mu          sync.Mutex
	index       uint64
	changed     chan struct{} // closed and replaced on every update
	jobs        map[string][]*api.Job
	evals       map[string]*api.Evaluation
	deployments map[string]*api.Deployment
	allocs      map[string]*api.Allocation
	nodes       map[string]*api.Node
	requests    map[string]int    // "METHOD /path" -> count
	queries     map[string]string // "/path" -> last raw query

	// Behaviour knobs set by tests.
	ignoreIndex  bool // answer blocking queries at once (a broken server)
	defaultWait  time.Duration
	planResp     *api.JobPlanResponse
	validateResp *api.JobValidateResponse
	failResp     *api.DeploymentUpdateResponse
	registerErr  string
	planErr      bool
	revertNoEval bool
	lastRegister *api.JobRegisterRequest
	// onRegister runs (without the lock) after a job version and its
	// pending eval have been stored.
	onRegister func(job *api.Job, evalID string)
}

func newFakeServer(t *testing.T) *fakeServer {
	t.Helper()
	f := &fakeServer{
		t: t, index: 100, changed: make(chan struct{}),
		jobs: map[string][]*api.Job{}, evals: map[string]*api.Evaluation{},
		deployments: map[string]*api.Deployment{}, allocs: map[string]*api.Allocation{},
		nodes: map[string]*api.Node{}, requests: map[string]int{}, queries: map[string]string{},
		defaultWait: 2 * time.Second,
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	t.Setenv("NOMAD_ADDR", f.srv.URL)
	for _, v := range []string{"NOMAD_NAMESPACE", "NOMAD_REGION", "NOMAD_TOKEN"} {
		t.Setenv(v, "")
	}
	return f
}

// update applies fn under the lock with a fresh index and wakes blocked
// queries.
func (f *fakeServer) update(fn func(index uint64)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.index++
	fn(f.index)
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeServer) count(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[key]
}

var idSeq struct {
	sync.Mutex
	n int
}

// newID returns a unique UUID-shaped ID starting with tag's first letter.
func newID(tag string) string {
	idSeq.Lock()
	idSeq.n++
	n := idSeq.n
	idSeq.Unlock()
	head := limit(tag, 1) + fmt.Sprintf("%07x", n)
	return fmt.Sprintf("%s-%04x-%04x-%04x-%012x", head, n, n, n, n)
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests[r.Method+" "+r.URL.Path]++
	f.queries[r.URL.Path] = r.URL.RawQuery
	f.mu.Unlock()
	p := r.URL.Path
	switch {
	case p == "/v1/jobs":
		f.serveJobs(w, r)
	case strings.HasPrefix(p, "/v1/job/"):
		f.serveJob(w, r, strings.TrimPrefix(p, "/v1/job/"))
	case p == "/v1/evaluations":
		f.serveEvalList(w, r)
	case strings.HasPrefix(p, "/v1/evaluation/"):
		f.serveEval(w, r, strings.TrimPrefix(p, "/v1/evaluation/"))
	case p == "/v1/deployments":
		f.serveDeploymentList(w, r)
	case strings.HasPrefix(p, "/v1/deployment/"):
		f.serveDeployment(w, r, strings.TrimPrefix(p, "/v1/deployment/"))
	case p == "/v1/allocations":
		f.serveAllocList(w, r)
	case strings.HasPrefix(p, "/v1/allocation/"):
		f.serveAlloc(w, r, strings.TrimPrefix(p, "/v1/allocation/"))
	case p == "/v1/nodes":
		f.serveNodeList(w, r)
	case strings.HasPrefix(p, "/v1/node/"):
		f.serveNode(w, r, strings.TrimPrefix(p, "/v1/node/"))
	case p == "/v1/validate/job":
		f.reply(w, f.validateResp)
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

// reply writes v as JSON with the current index.
func (f *fakeServer) reply(w http.ResponseWriter, v any) {
	f.mu.Lock()
	idx := f.index
	f.mu.Unlock()
	f.replyIndex(w, v, idx)
}

func (f *fakeServer) replyIndex(w http.ResponseWriter, v any, idx uint64) {
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(idx, 10))
	w.Header().Set("X-Nomad-KnownLeader", "true")
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// block waits, as a blocking query does, until current() passes the
// request's index or the wait elapses.
func (f *fakeServer) block(r *http.Request, current func() uint64) {
	q := r.URL.Query()
	index, _ := strconv.ParseUint(q.Get("index"), 10, 64)
	wait := f.defaultWait
	if d, err := time.ParseDuration(q.Get("wait")); err == nil && d > 0 {
		wait = d
	}
	timeout := time.After(wait)
	for {
		f.mu.Lock()
		idx, ch := current(), f.changed
		f.mu.Unlock()
		if index == 0 || idx > index || f.ignoreIndex {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (f *fakeServer) latestJob(id string) *api.Job {
	vs := f.jobs[id]
	if len(vs) == 0 {
		return nil
	}
	return vs[len(vs)-1]
}

func (f *fakeServer) serveJobs(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPut || r.Method == http.MethodPost {
		f.register(w, r)
		return
	}
	prefix := r.URL.Query().Get("prefix")
	f.mu.Lock()
	stubs := []*api.JobListStub{}
	for id := range f.jobs {
		if strings.HasPrefix(id, prefix) {
			stubs = append(stubs, jobStub(f.latestJob(id)))
		}
	}
	f.mu.Unlock()
	f.reply(w, stubs)
}

func jobStub(j *api.Job) *api.JobListStub {
	return &api.JobListStub{
		ID: *j.ID, Name: *j.Name, Namespace: *j.Namespace, Type: *j.Type, Priority: *j.Priority,
		Status: *j.Status, Stop: *j.Stop, SubmitTime: *j.SubmitTime,
		JobSummary: &api.JobSummary{JobID: *j.ID, Namespace: *j.Namespace},
	}
}

func (f *fakeServer) register(w http.ResponseWriter, r *http.Request) {
	var req api.JobRegisterRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if f.registerErr != "" {
		http.Error(w, f.registerErr, http.StatusInternalServerError)
		return
	}
	job := req.Job
	job.Canonicalize()
	evalID := newID("e")
	f.update(func(idx uint64) {
		f.lastRegister = &req
		version := uint64(0)
		if prev := f.latestJob(*job.ID); prev != nil {
			version = *prev.Version + 1
		}
		job.Version, job.Status = &version, new("running")
		job.SubmitTime = new(time.Now().UnixNano())
		job.JobModifyIndex, job.ModifyIndex = &idx, &idx
		f.jobs[*job.ID] = append(f.jobs[*job.ID], job)
		f.evals[evalID] = &api.Evaluation{
			ID: evalID, JobID: *job.ID, Namespace: *job.Namespace, Type: *job.Type, Priority: 50,
			TriggeredBy: "job-register", Status: evalStatusPending, CreateIndex: idx, ModifyIndex: idx,
		}
	})
	f.reply(w, &api.JobRegisterResponse{EvalID: evalID, EvalCreateIndex: f.index})
	if f.onRegister != nil {
		f.onRegister(job, evalID)
	}
}

func (f *fakeServer) serveJob(w http.ResponseWriter, r *http.Request, rest string) {
	id, suffix, _ := strings.Cut(rest, "/")
	f.mu.Lock()
	job := f.latestJob(id)
	f.mu.Unlock()
	if job == nil && suffix != "plan" {
		http.Error(w, "job not found", http.StatusNotFound)
		return
	}
	switch suffix {
	case "":
		if r.Method == http.MethodDelete {
			f.deregister(w, job)
			return
		}
		f.reply(w, job)
	case "plan":
		if f.planErr {
			http.Error(w, "plan exploded", http.StatusInternalServerError)
			return
		}
		f.reply(w, f.planResp)
	case "revert":
		f.revert(w, job)
	case "summary":
		f.reply(w, f.jobSummary(id))
	case "allocations":
		f.reply(w, f.allocStubs(func(a *api.Allocation) bool { return a.JobID == id }))
	case "evaluations":
		f.reply(w, f.evalsWhere(func(e *api.Evaluation) bool { return e.JobID == id }))
	case "deployment":
		f.block(r, func() uint64 { return f.index })
		f.reply(w, f.latestDeployment(id))
	case "versions":
		f.mu.Lock()
		vs := append([]*api.Job(nil), f.jobs[id]...)
		f.mu.Unlock()
		for i, j := 0, len(vs)-1; i < j; i, j = i+1, j-1 {
			vs[i], vs[j] = vs[j], vs[i]
		}
		f.reply(w, &api.JobVersionsResponse{Versions: vs})
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

func (f *fakeServer) revert(w http.ResponseWriter, job *api.Job) {
	if f.revertNoEval {
		f.reply(w, &api.JobRegisterResponse{})
		return
	}
	evalID := f.addEval(*job.ID, "", "job-register", evalStatusComplete)
	f.reply(w, &api.JobRegisterResponse{EvalID: evalID})
}

func (f *fakeServer) deregister(w http.ResponseWriter, job *api.Job) {
	evalID := newID("d")
	f.update(func(idx uint64) {
		job.Stop = new(true)
		f.evals[evalID] = &api.Evaluation{
			ID: evalID, JobID: *job.ID, TriggeredBy: "job-deregister", Status: evalStatusComplete,
			CreateIndex: idx, ModifyIndex: idx,
		}
	})
	f.reply(w, &api.JobDeregisterResponse{EvalID: evalID})
}

func (f *fakeServer) jobSummary(id string) *api.JobSummary {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &api.JobSummary{JobID: id, Namespace: "default", Summary: map[string]api.TaskGroupSummary{}}
	for _, a := range f.allocs {
		if a.JobID == id && a.ClientStatus == "running" {
			tg := s.Summary[a.TaskGroup]
			tg.Running++
			s.Summary[a.TaskGroup] = tg
		}
	}
	return s
}

func (f *fakeServer) latestDeployment(jobID string) *api.Deployment {
	f.mu.Lock()
	defer f.mu.Unlock()
	var latest *api.Deployment
	for _, d := range f.deployments {
		if d.JobID == jobID && (latest == nil || d.CreateIndex > latest.CreateIndex) {
			latest = d
		}
	}
	return latest
}

func (f *fakeServer) evalsWhere(match func(*api.Evaluation) bool) []*api.Evaluation {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []*api.Evaluation{}
	for _, e := range f.evals {
		if match(e) {
			out = append(out, e)
		}
	}
	return out
}

func (f *fakeServer) allocStubs(match func(*api.Allocation) bool) []*api.AllocationListStub {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []*api.AllocationListStub{}
	for _, a := range f.allocs {
		if match(a) {
			out = append(out, a.Stub())
		}
	}
	return out
}

func (f *fakeServer) serveEvalList(w http.ResponseWriter, r *http.Request) {
	prefix := r.URL.Query().Get("prefix")
	f.reply(w, f.evalsWhere(func(e *api.Evaluation) bool { return strings.HasPrefix(e.ID, prefix) }))
}

func (f *fakeServer) serveEval(w http.ResponseWriter, _ *http.Request, rest string) {
	id, suffix, _ := strings.Cut(rest, "/")
	if suffix == "allocations" {
		f.reply(w, f.allocStubs(func(a *api.Allocation) bool { return a.EvalID == id }))
		return
	}
	f.mu.Lock()
	e, ok := f.evals[id]
	var cp api.Evaluation
	if ok {
		cp = *e
	}
	f.mu.Unlock()
	if !ok {
		http.Error(w, "eval not found", http.StatusNotFound)
		return
	}
	f.reply(w, &cp)
}

func (f *fakeServer) serveDeploymentList(w http.ResponseWriter, r *http.Request) {
	prefix := r.URL.Query().Get("prefix")
	f.mu.Lock()
	out := []*api.Deployment{}
	for _, d := range f.deployments {
		if strings.HasPrefix(strings.ReplaceAll(d.ID, "-", ""), prefix) {
			cp := *d
			out = append(out, &cp)
		}
	}
	f.mu.Unlock()
	f.reply(w, out)
}

func (f *fakeServer) serveDeployment(w http.ResponseWriter, r *http.Request, rest string) {
	action, id, found := strings.Cut(rest, "/")
	if !found {
		action, id = "", rest
	}
	f.mu.Lock()
	d, ok := f.deployments[id]
	f.mu.Unlock()
	if !ok {
		http.Error(w, "deployment not found", http.StatusNotFound)
		return
	}
	switch action {
	case "":
		f.block(r, func() uint64 { return d.ModifyIndex })
		f.mu.Lock()
		cp, idx := *d, d.ModifyIndex
		f.mu.Unlock()
		f.replyIndex(w, &cp, idx)
	case "allocations":
		f.reply(w, f.allocStubs(func(a *api.Allocation) bool { return a.DeploymentID == id }))
	case "fail":
		resp := f.failResp
		if resp == nil {
			resp = &api.DeploymentUpdateResponse{}
		}
		f.reply(w, resp)
	case "pause", "promote":
		evalID := f.addEval(d.JobID, d.ID, "deployment-watcher", evalStatusComplete)
		f.reply(w, &api.DeploymentUpdateResponse{EvalID: evalID})
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

func (f *fakeServer) serveAllocList(w http.ResponseWriter, r *http.Request) {
	prefix := r.URL.Query().Get("prefix")
	f.reply(w, f.allocStubs(func(a *api.Allocation) bool { return strings.HasPrefix(a.ID, prefix) }))
}

func (f *fakeServer) serveAlloc(w http.ResponseWriter, _ *http.Request, id string) {
	f.mu.Lock()
	a, ok := f.allocs[id]
	f.mu.Unlock()
	if !ok {
		http.Error(w, "alloc not found", http.StatusNotFound)
		return
	}
	f.reply(w, a)
}

func (f *fakeServer) serveNodeList(w http.ResponseWriter, r *http.Request) {
	prefix := r.URL.Query().Get("prefix")
	f.mu.Lock()
	out := []*api.NodeListStub{}
	for _, n := range f.nodes {
		if strings.HasPrefix(n.ID, prefix) {
			out = append(out, &api.NodeListStub{ID: n.ID, Name: n.Name, Datacenter: n.Datacenter,
				NodePool: n.NodePool, Status: n.Status, SchedulingEligibility: n.SchedulingEligibility})
		}
	}
	f.mu.Unlock()
	f.reply(w, out)
}

func (f *fakeServer) serveNode(w http.ResponseWriter, _ *http.Request, rest string) {
	id, suffix, _ := strings.Cut(rest, "/")
	f.mu.Lock()
	n, ok := f.nodes[id]
	var allocs []*api.Allocation
	for _, a := range f.allocs {
		if a.NodeID == id {
			allocs = append(allocs, a)
		}
	}
	f.mu.Unlock()
	switch {
	case !ok:
		http.Error(w, "node not found", http.StatusNotFound)
	case suffix == "allocations":
		f.reply(w, allocs)
	default:
		f.reply(w, n)
	}
}

// --- scenario helpers (call inside update unless noted) ---

// addNode stores a ready node; it takes the lock itself.
func (f *fakeServer) addNode(name string) *api.Node {
	n := &api.Node{ID: newID("n"), Name: name, Datacenter: "dc1", NodePool: "default",
		Status: "ready", SchedulingEligibility: "eligible",
		Drivers: map[string]*api.DriverInfo{"docker": {Detected: true, Healthy: true}}}
	f.update(func(uint64) { f.nodes[n.ID] = n })
	return n
}

// addEval stores an eval; it takes the lock itself.
func (f *fakeServer) addEval(jobID, deploymentID, trigger, status string) string {
	id := newID("e")
	f.update(func(idx uint64) {
		f.evals[id] = &api.Evaluation{ID: id, JobID: jobID, DeploymentID: deploymentID,
			TriggeredBy: trigger, Status: status, CreateIndex: idx, ModifyIndex: idx}
	})
	return id
}

func (f *fakeServer) newDeployment(job *api.Job, idx uint64, total int, autoRevert bool) *api.Deployment {
	d := &api.Deployment{
		ID: newID("d"), Namespace: "default", JobID: *job.ID, JobVersion: *job.Version,
		Status: api.DeploymentStatusRunning, StatusDescription: "Deployment is running",
		TaskGroups:  map[string]*api.DeploymentState{},
		CreateIndex: idx, ModifyIndex: idx,
	}
	for _, tg := range job.TaskGroups {
		d.TaskGroups[*tg.Name] = &api.DeploymentState{DesiredTotal: total, AutoRevert: autoRevert,
			ProgressDeadline: 10 * time.Minute}
	}
	f.deployments[d.ID] = d
	return d
}

func (f *fakeServer) newAlloc(job *api.Job, evalID, nodeID, deploymentID string, idx uint64) *api.Allocation {
	tg := *job.TaskGroups[0].Name
	a := &api.Allocation{
		ID: newID("a"), EvalID: evalID, Name: *job.ID + "." + tg + "[0]", Namespace: "default",
		NodeID: nodeID, JobID: *job.ID, Job: job, TaskGroup: tg, DeploymentID: deploymentID,
		DesiredStatus: "run", ClientStatus: "pending", Metrics: &api.AllocationMetric{},
		CreateIndex: idx, ModifyIndex: idx, CreateTime: time.Now().UnixNano(), ModifyTime: time.Now().UnixNano(),
	}
	f.allocs[a.ID] = a
	return a
}

// --- test helpers ---

// fastTimers shortens the monitors' timers for the test.
func fastTimers(t *testing.T) {
	t.Helper()
	saved := []time.Duration{evalPollInterval, deploymentMinPoll, deploymentRetryBackoff, rollbackWait}
	evalPollInterval, deploymentMinPoll, deploymentRetryBackoff, rollbackWait =
		10*time.Millisecond, 200*time.Millisecond, 10*time.Millisecond, 2*time.Second
	t.Cleanup(func() {
		evalPollInterval, deploymentMinPoll, deploymentRetryBackoff, rollbackWait =
			saved[0], saved[1], saved[2], saved[3]
	})
}

// runCmd runs the CLI and returns exit code, stdout and stderr.
func runCmd(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := runIO(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// writeJobFile writes a JSON jobspec for a system job with one group.
func writeJobFile(t *testing.T, id string) string {
	t.Helper()
	job := map[string]any{"Job": map[string]any{
		"ID": id, "Name": id, "Type": "system", "Datacenters": []string{"dc1"},
		"TaskGroups": []any{map[string]any{"Name": id, "Tasks": []any{
			map[string]any{"Name": id, "Driver": "docker", "Config": map[string]any{"image": "nginx:1"}},
		}}},
	}}
	b, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), id+".json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
