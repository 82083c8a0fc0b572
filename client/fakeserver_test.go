package client

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/wire"
)

// fakeServer implements the internal endpoints a client calls, backed
// by maps, with a blocking allocs query woken by every change.
type fakeServer struct {
	t   *testing.T
	srv *httptest.Server

	mu            sync.Mutex
	ttl           time.Duration
	index         uint64
	nodes         map[string]*api.Node
	secrets       map[string]string
	registrations []*api.Node // every registration, in order
	heartbeats    int
	allocs        map[string]*api.Allocation
	batches       []updateBatch                           // every alloc update call, in order
	failUpdates   int                                     // answer the next n update calls with 500
	failBeats     bool                                    // answer heartbeats with 500 (cut off)
	badTokens     int                                     // calls with a wrong X-Nomad-Token
	wake          chan struct{}                           // closed and replaced on every change
	prefetch      map[string][]*structs.PrefetchDirective // by node ID
	reports       []*structs.PrefetchReport               // every prefetch report, in order
	identities    map[string]map[string]string            // signed identities, by alloc ID
	peers         map[string]prevPeer                     // migration peers, by alloc ID
	rights        map[string]*clientRights                // ACL resolve answers, by caller token ("" anonymous)
	resolves      int                                     // ACL resolve calls
	services      map[string][]*api.ServiceRegistration   // the catalog, by alloc ID (services_client_test.go)
	behindAt      uint64                                  // when set, allocs queries are answered as by a server that applied only up to it
	behindAnswers int                                     // allocs queries answered that way
}

type updateBatch struct {
	at     time.Time
	allocs []*api.Allocation
}

func newFakeServer(t *testing.T) *fakeServer {
	s := &fakeServer{t: t, ttl: 200 * time.Millisecond, nodes: map[string]*api.Node{}, secrets: map[string]string{},
		allocs: map[string]*api.Allocation{}, wake: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT "+wire.RouteNodeRegister, s.register)
	mux.HandleFunc("PUT "+wire.RouteNodeHeartbeat, s.heartbeat)
	mux.HandleFunc("GET "+wire.RouteNodeAllocs, s.getAllocs)
	mux.HandleFunc("PUT "+wire.RouteNodeAllocs, s.updateAllocs)
	mux.HandleFunc("PUT "+wire.RouteNodeACLResolve, s.resolveACL)
	mux.HandleFunc("GET "+wire.RouteNodePrefetch, s.getPrefetch)
	mux.HandleFunc("PUT "+wire.RouteNodePrefetch, s.putPrefetch)
	mux.HandleFunc("PUT "+wire.RouteNodeServices, s.putServices)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// addr is the server's "host:port".
func (s *fakeServer) addr() string { return strings.TrimPrefix(s.srv.URL, "http://") }

// bumpLocked advances the index and wakes blocked queries.
func (s *fakeServer) bumpLocked() uint64 {
	s.index++
	close(s.wake)
	s.wake = make(chan struct{})
	return s.index
}

func writeJSONT(w http.ResponseWriter, index uint64, v any) {
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(index, 10))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// authLocked checks the token of a call about node id.
func (s *fakeServer) authLocked(w http.ResponseWriter, r *http.Request, id string) bool {
	if _, ok := s.nodes[id]; !ok {
		http.Error(w, "node not found", http.StatusNotFound)
		return false
	}
	if r.Header.Get("X-Nomad-Token") != s.secrets[id] {
		s.badTokens++
		http.Error(w, "Permission denied", http.StatusForbidden)
		return false
	}
	return true
}

func (s *fakeServer) register(w http.ResponseWriter, r *http.Request) {
	var req wire.NodeRegisterRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Node == nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Header.Get("X-Nomad-Token") != req.SecretID {
		s.badTokens++
	}
	if old, ok := s.secrets[req.Node.ID]; ok && old != req.SecretID {
		http.Error(w, "node secret mismatch", http.StatusForbidden)
		return
	}
	s.nodes[req.Node.ID] = req.Node
	s.secrets[req.Node.ID] = req.SecretID
	s.registrations = append(s.registrations, req.Node)
	idx := s.bumpLocked()
	writeJSONT(w, idx, &wire.NodeRegisterResponse{EvalIDs: []string{}, Index: idx, HeartbeatTTL: s.ttl})
}

func (s *fakeServer) heartbeat(w http.ResponseWriter, r *http.Request) {
	var req wire.NodeHeartbeatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Status != "ready" {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.authLocked(w, r, r.PathValue("id")) {
		return
	}
	if s.failBeats {
		http.Error(w, "injected failure", http.StatusInternalServerError)
		return
	}
	s.heartbeats++
	writeJSONT(w, s.index, &wire.NodeHeartbeatResponse{HeartbeatTTL: s.ttl, Index: s.index})
}

func (s *fakeServer) getAllocs(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	minIndex, _ := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
	wait, err := time.ParseDuration(r.URL.Query().Get("wait"))
	if err != nil {
		http.Error(w, "bad wait", http.StatusBadRequest)
		return
	}
	timeout := time.After(wait)
	s.mu.Lock()
	if !s.authLocked(w, r, id) {
		s.mu.Unlock()
		return
	}
	for s.index <= minIndex || s.behindAt > 0 {
		if s.behindAt > 0 {
			s.writeBehindLocked(w, id)
			s.mu.Unlock()
			return
		}
		ch := s.wake
		s.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
		case <-r.Context().Done():
			return
		}
		s.mu.Lock()
		if ch == s.wake { // timed out without a change
			break
		}
	}
	out := []*wire.NodeAlloc{}
	for _, a := range s.allocs {
		if a.NodeID == id {
			job, err := json.Marshal(a.Job) // sent beside the allocation, as the server does
			if err != nil {
				s.t.Errorf("encoding the job of %s: %v", a.ID, err)
			}
			peer := s.peers[a.ID]
			out = append(out, &wire.NodeAlloc{Allocation: a, Job: job, SignedIdentities: s.identities[a.ID],
				PreviousNodeAddr: peer.addr, MigrateToken: peer.token})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	raw, _ := json.Marshal(out) // snapshot under the lock
	idx := s.index
	s.mu.Unlock()
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(idx, 10))
	_, _ = w.Write(raw)
}

func (s *fakeServer) updateAllocs(w http.ResponseWriter, r *http.Request) {
	var req wire.AllocUpdateRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.authLocked(w, r, r.PathValue("id")) {
		return
	}
	if s.failUpdates > 0 {
		s.failUpdates--
		http.Error(w, "injected failure", http.StatusInternalServerError)
		return
	}
	s.batches = append(s.batches, updateBatch{at: time.Now(), allocs: req.Allocs})
	idx := s.bumpLocked()
	for _, u := range req.Allocs {
		a, ok := s.allocs[u.ID]
		if !ok {
			continue
		}
		// Client updates change ModifyIndex, not AllocModifyIndex.
		a.ClientStatus, a.ClientDescription, a.TaskStates = u.ClientStatus, u.ClientDescription, u.TaskStates
		if u.DeploymentStatus != nil { // none: the server keeps its own
			a.DeploymentStatus = u.DeploymentStatus
		}
		a.ModifyIndex = idx
	}
	writeJSONT(w, idx, &api.WriteMeta{LastIndex: idx})
}

// upsertAlloc stores a (a server-side change: AllocModifyIndex advances).
func (s *fakeServer) upsertAlloc(a *api.Allocation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := s.bumpLocked()
	if old, ok := s.allocs[a.ID]; ok {
		a.CreateIndex = old.CreateIndex
	} else {
		a.CreateIndex = idx
	}
	a.ModifyIndex, a.AllocModifyIndex = idx, idx
	s.allocs[a.ID] = a
}

// resolveACL answers from s.rights: a token not in it is "ACL token not
// found"; rights without ACLEnabled mean ACLs are off.
func (s *fakeServer) resolveACL(w http.ResponseWriter, r *http.Request) {
	var req wire.ACLResolveRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.authLocked(w, r, r.PathValue("id")) {
		return
	}
	s.resolves++
	rights, ok := s.rights[req.SecretID]
	if !ok {
		http.Error(w, "ACL token not found", http.StatusForbidden)
		return
	}
	writeJSONT(w, s.index, rights)
}

// resolveCount is the number of ACL resolve calls so far.
func (s *fakeServer) resolveCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resolves
}

// upsertAllocWithIdentities stores a with the signed identities the
// server would send its node.
func (s *fakeServer) upsertAllocWithIdentities(a *api.Allocation, ids map[string]string) {
	s.mu.Lock()
	if s.identities == nil {
		s.identities = map[string]map[string]string{}
	}
	s.identities[a.ID] = ids
	s.mu.Unlock()
	s.upsertAlloc(a)
}

// stopAlloc sets the allocation's desired status to stop.
func (s *fakeServer) stopAlloc(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := s.bumpLocked()
	a := s.allocs[id]
	a.DesiredStatus, a.DesiredDescription = "stop", "alloc is being stopped"
	a.ModifyIndex, a.AllocModifyIndex = idx, idx
}

// deleteAlloc removes the allocation (garbage collection).
func (s *fakeServer) deleteAlloc(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.allocs, id)
	s.bumpLocked()
}

// forgetNodes drops every node, as a server that lost its state would.
func (s *fakeServer) forgetNodes() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes, s.secrets = map[string]*api.Node{}, map[string]string{}
}

// clientStatus returns the reported client status of alloc id.
func (s *fakeServer) clientStatus(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.allocs[id]; a != nil {
		return a.ClientStatus
	}
	return ""
}

// deploymentStatus returns a copy of the deployment status of alloc id.
func (s *fakeServer) deploymentStatus(id string) *api.AllocDeploymentStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.allocs[id]
	if a == nil || a.DeploymentStatus == nil {
		return nil
	}
	ds := *a.DeploymentStatus
	return &ds
}

// taskState returns a copy of the reported state of task of alloc id.
func (s *fakeServer) taskState(id, task string) *api.TaskState {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.allocs[id]
	if a == nil || a.TaskStates[task] == nil {
		return nil
	}
	raw, _ := json.Marshal(a.TaskStates[task])
	var out api.TaskState
	_ = json.Unmarshal(raw, &out)
	return &out
}

// reported lists, in order, the client statuses received for alloc id.
func (s *fakeServer) reported(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, b := range s.batches {
		for _, a := range b.allocs {
			if a.ID == id {
				out = append(out, a.ClientStatus)
			}
		}
	}
	return out
}

func (s *fakeServer) counts() (registrations, heartbeats int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.registrations), s.heartbeats
}

func (s *fakeServer) lastRegistration() *api.Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.registrations) == 0 {
		return nil
	}
	return s.registrations[len(s.registrations)-1]
}

func (s *fakeServer) batchesCopy() []updateBatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]updateBatch(nil), s.batches...)
}

func (s *fakeServer) resetBatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = nil
}

// replaceAlloc stops old and places repl as its replacement on the same
// node, in one change (as one plan would).
func (s *fakeServer) replaceAlloc(oldID string, repl *api.Allocation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := s.bumpLocked()
	old := s.allocs[oldID]
	old.DesiredStatus, old.DesiredDescription = "stop", "alloc is being updated due to job update"
	old.ModifyIndex, old.AllocModifyIndex = idx, idx
	old.NextAllocation = repl.ID
	repl.PreviousAllocation = oldID
	repl.CreateIndex, repl.ModifyIndex, repl.AllocModifyIndex = idx, idx, idx
	s.allocs[repl.ID] = repl
}

// setDesired changes the desired status of alloc id.
func (s *fakeServer) setDesired(id, desired string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := s.bumpLocked()
	a := s.allocs[id]
	a.DesiredStatus = desired
	a.ModifyIndex, a.AllocModifyIndex = idx, idx
}

// waitIndexLocked blocks (releasing s.mu meanwhile) until the index passes
// minIndex, wait elapses or r ends; it reports false when r ended.
func (s *fakeServer) waitIndexLocked(r *http.Request, minIndex uint64, wait time.Duration) bool {
	timeout := time.After(wait)
	for s.index <= minIndex {
		ch := s.wake
		s.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
		case <-r.Context().Done():
			s.mu.Lock()
			return false
		}
		s.mu.Lock()
		if ch == s.wake {
			break
		}
	}
	return true
}

func (s *fakeServer) getPrefetch(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	minIndex, _ := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
	wait, err := time.ParseDuration(r.URL.Query().Get("wait"))
	if err != nil {
		http.Error(w, "bad wait", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.authLocked(w, r, id) || !s.waitIndexLocked(r, minIndex, wait) {
		return
	}
	writeJSONT(w, s.index, &wire.PrefetchDirectives{Directives: s.prefetch[id], Index: s.index})
}

func (s *fakeServer) putPrefetch(w http.ResponseWriter, r *http.Request) {
	var req wire.PrefetchReportRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.authLocked(w, r, r.PathValue("id")) {
		return
	}
	s.reports = append(s.reports, req.Reports...)
	// As the leader does: a done directive stays listed, a failed one goes.
	for _, rep := range req.Reports {
		dirs := s.prefetch[r.PathValue("id")][:0]
		for _, d := range s.prefetch[r.PathValue("id")] {
			if d.DeploymentID == rep.DeploymentID {
				if rep.State == structs.PrefetchStateFailed {
					continue
				}
				d.State = rep.State
			}
			dirs = append(dirs, d)
		}
		s.prefetch[r.PathValue("id")] = dirs
	}
	writeJSONT(w, s.bumpLocked(), map[string]any{})
}

// setPrefetch replaces node's prefetch directives.
func (s *fakeServer) setPrefetch(node string, dirs ...*structs.PrefetchDirective) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prefetch == nil {
		s.prefetch = map[string][]*structs.PrefetchDirective{}
	}
	s.prefetch[node] = dirs
	s.bumpLocked()
}

// prefetchReports returns a copy of the reports received.
func (s *fakeServer) prefetchReports() []structs.PrefetchReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]structs.PrefetchReport, len(s.reports))
	for i, r := range s.reports {
		out[i] = *r
	}
	return out
}

// upsertAllocWithPeer adds a with the previous node to fetch its
// ephemeral data from.
func (s *fakeServer) upsertAllocWithPeer(a *api.Allocation, peer prevPeer) {
	s.mu.Lock()
	if s.peers == nil {
		s.peers = map[string]prevPeer{}
	}
	s.peers[a.ID] = peer
	s.mu.Unlock()
	s.upsertAlloc(a)
}

// secretOf returns the secret ID node registered with.
func (s *fakeServer) secretOf(node string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.secrets[node]
}

// writeBehindLocked answers a node's allocs query as a server that has
// applied entries only up to s.behindAt does: at once (its index is below
// the client's), with the allocations created by then.
func (s *fakeServer) writeBehindLocked(w http.ResponseWriter, node string) {
	s.behindAnswers++
	out := []*wire.NodeAlloc{}
	for _, a := range s.allocs {
		if a.NodeID == node && a.CreateIndex <= s.behindAt {
			job, _ := json.Marshal(a.Job)
			out = append(out, &wire.NodeAlloc{Allocation: a, Job: job})
		}
	}
	raw, _ := json.Marshal(out)
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(s.behindAt, 10))
	_, _ = w.Write(raw)
}

// setBehind makes the server answer allocs queries from its view at index
// (0: its current view again), and wakes the blocked ones.
func (s *fakeServer) setBehind(index uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.behindAt = index
	close(s.wake)
	s.wake = make(chan struct{})
}

// currentIndex is the server's index.
func (s *fakeServer) currentIndex() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.index
}

// behindCount is how many allocs queries were answered from behind.
func (s *fakeServer) behindCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.behindAnswers
}
