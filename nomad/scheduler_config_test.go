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
			cfg, _, err := srv.SchedulerConfig()
			require.NoError(t, err)
			require.Equal(t, structs.SchedulerAlgorithmSpread, cfg.SchedulerAlgorithm)
		}},
	})
}
