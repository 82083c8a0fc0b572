package state

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func TestRootKeys_OneActiveAndDelete(t *testing.T) {
	s := NewStateStore()
	key := func(id string) *structs.RootKey {
		return &structs.RootKey{KeyID: id, State: structs.RootKeyStateActive, SigningKey: []byte(id)}
	}
	require.NoError(t, s.UpsertRootKey(5, key("a")))
	require.NoError(t, s.UpsertRootKey(7, key("b")))

	keys, err := s.RootKeys(nil)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	require.Equal(t, "a", keys[0].KeyID)
	require.Equal(t, structs.RootKeyStateInactive, keys[0].State, "the older key was demoted")
	require.Equal(t, uint64(5), keys[0].CreateIndex)
	require.Equal(t, uint64(7), keys[0].ModifyIndex)
	active, err := s.ActiveRootKey(nil)
	require.NoError(t, err)
	require.Equal(t, "b", active.KeyID)
	require.Equal(t, uint64(7), s.Index(TableRootKeys))

	require.ErrorIs(t, s.DeleteRootKey(8, "b"), ErrActiveRootKey)
	require.Equal(t, uint64(7), s.Index(TableRootKeys), "a refused delete writes nothing")
	require.NoError(t, s.DeleteRootKey(9, "a"))
	keys, err = s.RootKeys(nil)
	require.NoError(t, err)
	require.Len(t, keys, 1)
	require.Equal(t, uint64(9), s.Index(TableRootKeys))
	require.NoError(t, s.DeleteRootKey(10, "missing"))
}
