package nomad

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func TestSnapshotSaveAndRestore_NeedManagement(t *testing.T) {
	srv := queryTestServer(t)
	refused, allowed := managementWriters(t)
	for who, a := range refused {
		var out bytes.Buffer
		_, err := srv.SnapshotSave(a, &out)
		require.ErrorIs(t, err, structs.ErrForbidden, who)
		require.Zero(t, out.Len(), "a refused save writes no archive")

		body := strings.NewReader("not an archive")
		before := srv.State().LatestIndex()
		err = srv.SnapshotRestore(a, body)
		require.ErrorIs(t, err, structs.ErrForbidden, who)
		require.Equal(t, len("not an archive"), body.Len(), "a refused restore reads nothing")
		require.Equal(t, before, srv.State().LatestIndex())
	}
	var out bytes.Buffer
	n, err := srv.SnapshotSave(allowed, &out)
	require.NoError(t, err)
	require.Equal(t, int64(out.Len()), n)
	require.Positive(t, n)
	// A permitted restore reads the body (and refuses what is no archive).
	body := strings.NewReader("not an archive")
	err = srv.SnapshotRestore(allowed, body)
	require.Error(t, err)
	require.NotErrorIs(t, err, structs.ErrForbidden)
	require.Less(t, body.Len(), len("not an archive"))
}
