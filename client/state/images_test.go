package state

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func TestKnownImages_ReplaceAndPersist(t *testing.T) {
	db, path := openTemp(t)
	got, err := db.KnownImages()
	require.NoError(t, err)
	require.Empty(t, got)

	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, db.PutKnownImages(map[string]KnownImage{"sha256:a": {}, "sha256:b": {FirstUnleasedAt: at}}))
	require.NoError(t, db.PutKnownImages(map[string]KnownImage{"sha256:b": {FirstUnleasedAt: at, RetryAt: at.Add(time.Minute)}, "sha256:c": {}}))
	require.NoError(t, db.Close())

	db, err = Open(path)
	require.NoError(t, err)
	defer db.Close()
	got, err = db.KnownImages()
	require.NoError(t, err)
	require.Equal(t, map[string]KnownImage{"sha256:b": {FirstUnleasedAt: at, RetryAt: at.Add(time.Minute)}, "sha256:c": {}}, got)
	require.True(t, got["sha256:c"].FirstUnleasedAt.IsZero())
}

func TestAllocImages_LiveAndDieWithTheAlloc(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	rec := &AllocImages{Tasks: map[string]string{"web": "sha256:a"}, Chain: []string{"sha256:old"}, Healthy: true}

	require.NoError(t, db.PutAllocImages("gone", rec))
	ids, err := db.AllocIDs()
	require.NoError(t, err)
	require.Empty(t, ids, "no bucket is created for an allocation that was deleted")

	require.NoError(t, db.PutAlloc(&structs.Allocation{ID: "a1"}))
	require.NoError(t, db.PutAllocImages("a1", rec))
	got, err := db.AllocImages("a1")
	require.NoError(t, err)
	require.Equal(t, rec, got)

	require.NoError(t, db.DeleteAlloc("a1"))
	got, err = db.AllocImages("a1")
	require.NoError(t, err)
	require.Nil(t, got)
}
