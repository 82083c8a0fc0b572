package state

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestSchedulerConfigCAS: none is stored at first; a check-and-set write
// succeeds only against the stored ModifyIndex (0 before the first write),
// and a refused one writes nothing.
func TestSchedulerConfigCAS(t *testing.T) {
	s := NewStateStore()
	got, err := s.SchedulerConfig(nil)
	require.NoError(t, err)
	require.Nil(t, got)

	cfg := structs.DefaultSchedulerConfiguration()
	cfg.ModifyIndex = 7
	ok, err := s.SetSchedulerConfig(5, cfg, true)
	require.NoError(t, err)
	require.False(t, ok, "nothing stored: only index 0 matches")

	cfg.ModifyIndex = 0
	ok, err = s.SetSchedulerConfig(5, cfg, true)
	require.NoError(t, err)
	require.True(t, ok)

	spread := *cfg
	spread.SchedulerAlgorithm = structs.SchedulerAlgorithmSpread
	spread.ModifyIndex = 4
	ok, err = s.SetSchedulerConfig(6, &spread, true)
	require.NoError(t, err)
	require.False(t, ok)
	got, _ = s.SchedulerConfig(nil)
	require.Equal(t, structs.SchedulerAlgorithmBinpack, got.SchedulerAlgorithm)
	require.Equal(t, uint64(5), s.Index(TableSchedulerConfig))

	spread.ModifyIndex = 5
	ok, err = s.SetSchedulerConfig(8, &spread, true)
	require.NoError(t, err)
	require.True(t, ok)
	got, _ = s.SchedulerConfig(nil)
	require.Equal(t, structs.SchedulerAlgorithmSpread, got.SchedulerAlgorithm)
	require.Equal(t, uint64(5), got.CreateIndex)
	require.Equal(t, uint64(8), got.ModifyIndex)

	// Without CAS the write always happens.
	ok, err = s.SetSchedulerConfig(9, cfg, false)
	require.NoError(t, err)
	require.True(t, ok)
}
