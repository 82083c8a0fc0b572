package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

func TestSetSchedulerConfig_NeedsOperatorWrite(t *testing.T) {
	srv := queryTestServer(t)
	refused, allowed := operatorWriters(t)
	testWrites(t, srv, refused, allowed, []writeCase{
		{name: "scheduler configuration", run: func(a *acl.ACL) error {
			cfg := structs.DefaultSchedulerConfiguration()
			cfg.SchedulerAlgorithm = structs.SchedulerAlgorithmSpread
			return ignore3(srv.SetSchedulerConfig(a, cfg, false))
		}, done: func(t *testing.T) {
			cfg, _, err := srv.SchedulerConfig(nil)
			require.NoError(t, err)
			require.Equal(t, structs.SchedulerAlgorithmSpread, cfg.SchedulerAlgorithm)
		}},
	})
}

// The operator reads (and the member list) check their caller too.
func TestOperatorReads_NeedOperatorRead(t *testing.T) {
	srv := queryTestServer(t)
	reads := []struct {
		name    string
		read    func(a *acl.ACL) error
		allowed *acl.ACL
	}{
		{"scheduler configuration", func(a *acl.ACL) error { return ignore3(srv.SchedulerConfig(a)) }, policyACL(t, `operator { policy = "read" }`)},
		{"autopilot configuration", func(a *acl.ACL) error { return ignore3(srv.AutopilotConfig(a)) }, policyACL(t, `operator { policy = "read" }`)},
		{"autopilot health", func(a *acl.ACL) error { return ignore2(srv.AutopilotHealth(t.Context(), a)) }, policyACL(t, `operator { policy = "read" }`)},
		{"raft configuration", func(a *acl.ACL) error { return ignore3(srv.RaftConfiguration(a)) }, policyACL(t, `operator { policy = "read" }`)},
		{"members", func(a *acl.ACL) error { return ignore2(srv.Members(t.Context(), a)) }, policyACL(t, `node { policy = "read" }`)},
	}
	others := policyACL(t, `namespace "*" { policy = "write" }`, `agent { policy = "write" }`)
	for _, r := range reads {
		t.Run(r.name, func(t *testing.T) {
			require.ErrorIs(t, r.read(others), structs.ErrForbidden)
			require.NoError(t, r.read(r.allowed))
			require.NoError(t, r.read(nil), "ACLs disabled")
		})
	}
}
