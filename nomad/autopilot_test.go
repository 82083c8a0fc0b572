package nomad

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

func TestServerHealthy(t *testing.T) {
	cfg := structs.DefaultAutopilotConfiguration()
	ok := ServerHealth{Status: "alive", LastTerm: 3, LastIndex: 100, LastContact: 50 * time.Millisecond}
	cases := []struct {
		name string
		mod  func(h *ServerHealth)
		want bool
	}{
		{"healthy", func(*ServerHealth) {}, true},
		{"unreachable", func(h *ServerHealth) { h.Status = "failed" }, false},
		{"old term", func(h *ServerHealth) { h.LastTerm = 2 }, false},
		{"silent too long", func(h *ServerHealth) { h.LastContact = time.Second }, false},
		{"trailing within limit", func(h *ServerHealth) { h.LastIndex = 100 }, true}, // 200 behind
		{"trailing too far", func(h *ServerHealth) { h.LastIndex = 1 }, false},       // 299 behind
		{"ahead of the leader", func(h *ServerHealth) { h.LastIndex = 400 }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := ok
			tc.mod(&h)
			require.Equal(t, tc.want, serverHealthy(h, 3, 300, cfg))
		})
	}
}

func TestFailureTolerance(t *testing.T) {
	for _, tc := range []struct{ voters, healthy, want int }{
		{1, 1, 0}, {3, 3, 1}, {3, 2, 0}, {5, 5, 2}, {5, 3, 0}, {3, 1, 0},
	} {
		require.Equal(t, tc.want, failureTolerance(tc.voters, tc.healthy), "%+v", tc)
	}
}

func TestStableTracker(t *testing.T) {
	var st stableTracker
	t0 := time.Unix(100, 0)
	require.Equal(t, t0, st.observe("a", true, t0))
	require.Equal(t, t0, st.observe("a", true, t0.Add(time.Minute)), "stable since the first healthy sight")
	require.True(t, st.observe("a", false, t0.Add(2*time.Minute)).IsZero())
	require.Equal(t, t0.Add(3*time.Minute), st.observe("a", true, t0.Add(3*time.Minute)))
}

func TestSetAutopilotConfig_NeedsOperatorWrite(t *testing.T) {
	srv := queryTestServer(t)
	refused, allowed := operatorWriters(t)
	testWrites(t, srv, refused, allowed, []writeCase{
		{name: "autopilot configuration", run: func(a *acl.ACL) error {
			cfg := structs.DefaultAutopilotConfiguration()
			cfg.MaxTrailingLogs = 777
			return ignore3(srv.SetAutopilotConfig(a, cfg, false))
		}, done: func(t *testing.T) {
			cfg, _, err := srv.AutopilotConfig(nil)
			require.NoError(t, err)
			require.Equal(t, uint64(777), cfg.MaxTrailingLogs)
		}},
	})
}
