package client

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/wire"
)

// putServices is the fake server's side of wire.RouteNodeServices: each
// allocation listed advertises exactly what it sent.
func (s *fakeServer) putServices(w http.ResponseWriter, r *http.Request) {
	var req wire.NodeServicesRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.authLocked(w, r, r.PathValue("id")) {
		return
	}
	if s.services == nil {
		s.services = map[string][]*api.ServiceRegistration{}
	}
	for _, as := range req.Allocs {
		if len(as.Services) == 0 {
			delete(s.services, as.AllocID)
		} else {
			s.services[as.AllocID] = as.Services
		}
	}
	writeJSONT(w, s.bumpLocked(), &api.WriteMeta{})
}

// advertised returns the names and ports allocID advertises.
func (s *fakeServer) advertised(allocID string) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, r := range s.services[allocID] {
		out[r.ServiceName] = r.Port
	}
	return out
}

// TestServicesRegisteredWhileRunning: a running allocation's service
// reaches the servers' catalog with its port; the server stopping the
// allocation takes it back.
func TestServicesRegisteredWhileRunning(t *testing.T) {
	srv := newFakeServer(t)
	c := startClient(t, testConfig(srv, t.TempDir()))
	waitRegistered(t, c)

	a := mockAlloc(c.NodeID(), map[string]any{}) // runs until stopped
	a.Job.TaskGroups[0].Services = []*api.Service{{Name: "web", PortLabel: "http", Provider: "nomad"}}
	a.AllocatedResources = &api.AllocatedResources{Shared: api.AllocatedSharedResources{Ports: []api.PortMapping{
		{Label: "http", Value: 25001, HostIP: "127.0.0.1"},
	}}}
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.advertised(a.ID)["web"] == 25001 }, waitFor, tick)

	srv.stopAlloc(a.ID)
	require.Eventually(t, func() bool { return len(srv.advertised(a.ID)) == 0 }, waitFor, tick)
}
