package snapshot

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

func TestArchiveRoundTrip(t *testing.T) {
	state := strings.Repeat("state bytes ", 1000)
	meta := &raft.SnapshotMeta{ID: "s1", Index: 42, Term: 3}
	var arch bytes.Buffer
	require.NoError(t, Write(&arch, meta, strings.NewReader(state), int64(len(state))))

	var out bytes.Buffer
	got, err := Read(bytes.NewReader(arch.Bytes()), &out)
	require.NoError(t, err)
	require.Equal(t, uint64(42), got.Index)
	require.Equal(t, state, out.String())
}

func TestArchiveCorruption(t *testing.T) {
	var arch bytes.Buffer
	require.NoError(t, Write(&arch, &raft.SnapshotMeta{Index: 1}, strings.NewReader("abc"), 3))
	_, err := Read(strings.NewReader("not gzip"), &bytes.Buffer{})
	require.ErrorIs(t, err, ErrCorrupt)
	trunc := arch.Bytes()[:arch.Len()/2]
	_, err = Read(bytes.NewReader(trunc), &bytes.Buffer{})
	require.ErrorIs(t, err, ErrCorrupt)
	require.Error(t, Write(&bytes.Buffer{}, &raft.SnapshotMeta{}, strings.NewReader("ab"), 3), "short state")
}

func TestBuffer(t *testing.T) {
	b, err := NewBuffer(t.TempDir())
	require.NoError(t, err)
	_, err = b.Write([]byte("hello"))
	require.NoError(t, err)
	require.Equal(t, int64(5), b.Size())
	r, err := b.Reader()
	require.NoError(t, err)
	var out bytes.Buffer
	_, err = out.ReadFrom(r)
	require.NoError(t, err)
	require.Equal(t, "hello", out.String())
	require.NoError(t, b.Close())
}
