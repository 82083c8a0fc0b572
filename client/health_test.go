package client

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// A system allocation of a deployment whose check passes is reported
// healthy to the server with its status updates, keeping its canary flag,
// and its check results are served.
func TestDeploymentHealthIsReported(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.timing.flushInterval = 20 * time.Millisecond
	c := startClient(t, cfg)
	waitRegistered(t, c)

	a := mockAlloc(c.NodeID(), map[string]any{"run_for": "1h"})
	a.Job.Type = ptr("system")
	tg := a.Job.TaskGroups[0]
	tg.Update = &api.UpdateStrategy{
		MaxParallel: ptr(1), HealthCheck: ptr("checks"), MinHealthyTime: ptr(200 * time.Millisecond), HealthyDeadline: ptr(time.Minute),
	}
	tg.Services = []*api.Service{{Name: "web", PortLabel: "http", Provider: "nomad", Checks: []api.ServiceCheck{
		{Name: "alive", Type: "tcp", Interval: 50 * time.Millisecond, Timeout: time.Second},
	}}}
	a.AllocatedResources = &api.AllocatedResources{Shared: api.AllocatedSharedResources{Ports: []api.PortMapping{
		{Label: "http", Value: ln.Addr().(*net.TCPAddr).Port, HostIP: "127.0.0.1"},
	}}}
	a.DeploymentID = "d1"
	a.DeploymentStatus = &api.AllocDeploymentStatus{Canary: true}
	began := time.Now()
	srv.upsertAlloc(a)

	require.Eventually(t, func() bool {
		ds := srv.deploymentStatus(a.ID)
		return ds != nil && ds.Healthy != nil
	}, waitFor, tick)
	ds := srv.deploymentStatus(a.ID)
	require.True(t, *ds.Healthy)
	require.True(t, ds.Canary)
	require.GreaterOrEqual(t, ds.Timestamp.Sub(began), 200*time.Millisecond, "not before min_healthy_time")
	require.Equal(t, "running", srv.clientStatus(a.ID))

	var checks api.AllocCheckStatuses
	require.Equal(t, http.StatusOK, getJSON(t, c.Handler(), "/v1/client/allocation/"+a.ID+"/checks", &checks))
	require.Len(t, checks, 1)
	for id, st := range checks {
		require.Equal(t, id, st.ID)
		require.Equal(t, "alive", st.Check)
		require.Equal(t, "web", st.Service)
		require.Equal(t, "g", st.Group)
		require.Equal(t, "healthiness", st.Mode)
		require.Equal(t, "success", st.Status)
		require.NotZero(t, st.Timestamp)
	}
	code, _ := getBody(t, c.Handler(), "/v1/client/allocation/nope/checks")
	require.Equal(t, http.StatusNotFound, code)
}
