package agent

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestContractOperatorRaft(t *testing.T) {
	ta := newTestAgent(t, "")
	op := ta.client.Operator()

	cfg, err := op.RaftGetConfiguration(nil)
	require.NoError(t, err)
	require.Len(t, cfg.Servers, 1)
	s := cfg.Servers[0]
	require.True(t, s.Leader)
	require.True(t, s.Voter)
	require.Equal(t, ta.Server().RPCAddr(), s.Address)
	require.Equal(t, ta.config.Name, s.ID)

	err = op.RaftRemovePeerByID("nope", nil)
	requireStatus(t, err, http.StatusBadRequest, `id "nope" was not found in the Raft configuration`)
	err = op.RaftRemovePeerByAddress("10.9.9.9:4647", nil)
	requireStatus(t, err, http.StatusBadRequest, `address "10.9.9.9:4647" was not found in the Raft configuration`)
	_, err = ta.client.Raw().Delete("/v1/operator/raft/peer", nil, nil)
	requireStatus(t, err, http.StatusBadRequest, "Must specify either ?id")

	after, err := op.RaftGetConfiguration(nil)
	require.NoError(t, err)
	require.Len(t, after.Servers, 1, "nothing was removed")
}
