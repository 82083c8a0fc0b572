package allocrunner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/helper/pathguard"
)

// TestWritePayloadThroughSymlinks: the payload is written only inside the
// task dir: a local/ (or a directory below it) replaced by a symlink out is
// refused, and a symlink at the file itself is replaced, not written
// through.
func TestWritePayloadThroughSymlinks(t *testing.T) {
	taskDir := t.TempDir()
	local := filepath.Join(taskDir, "local")
	host := t.TempDir()
	require.NoError(t, os.Symlink(host, local))
	err := writePayload(taskDir, local, "in/payload.json", []byte("x"))
	require.ErrorIs(t, err, pathguard.ErrOutside)
	require.ErrorContains(t, err, `file "in/payload.json"`)
	entries, err := os.ReadDir(host)
	require.NoError(t, err)
	require.Empty(t, entries)

	require.NoError(t, os.Remove(local))
	require.NoError(t, os.Mkdir(local, 0o755))
	victim := filepath.Join(host, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("host"), 0o600))
	require.NoError(t, os.Symlink(victim, filepath.Join(local, "payload.json")))
	require.NoError(t, writePayload(taskDir, local, "payload.json", []byte("payload")))
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	require.Equal(t, "host", string(b))
	b, err = os.ReadFile(filepath.Join(local, "payload.json"))
	require.NoError(t, err)
	require.Equal(t, "payload", string(b))
}
