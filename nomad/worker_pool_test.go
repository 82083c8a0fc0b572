package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func TestSetWorkerPoolConfig_NeedsAgentWrite(t *testing.T) {
	srv := queryTestServer(t)
	want := srv.WorkerPoolConfig()
	require.Equal(t, 1, want.NumSchedulers)
	want.NumSchedulers = 2
	err := srv.SetWorkerPoolConfig(policyACL(t, `agent { policy = "read" }`, `operator { policy = "write" }`), want)
	require.ErrorIs(t, err, structs.ErrForbidden)
	require.Equal(t, 1, srv.WorkerPoolConfig().NumSchedulers, "a refused change changes nothing")
	require.NoError(t, srv.SetWorkerPoolConfig(policyACL(t, `agent { policy = "write" }`), want))
	require.Equal(t, 2, srv.WorkerPoolConfig().NumSchedulers)
}
