package taskrunner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/helper/pathguard"
	"github.com/drover-project/drover/nomad/structs"
)

// TestWriteIdentitiesRefusesSymlinkedSecrets: a secrets/ an earlier run of
// the task replaced by a symlink to a host directory gets no token written
// into the host directory.
func TestWriteIdentitiesRefusesSymlinkedSecrets(t *testing.T) {
	taskDir := t.TempDir()
	host := t.TempDir()
	require.NoError(t, os.Symlink(host, filepath.Join(taskDir, "secrets")))
	task := &structs.Task{Name: "web", Identity: &structs.WorkloadIdentity{File: true}}
	alloc := &structs.Allocation{SignedIdentities: map[string]string{"web": "signed-jwt"}}

	err := writeIdentities(taskDir, alloc, task)
	require.ErrorIs(t, err, pathguard.ErrOutside)
	entries, err := os.ReadDir(host)
	require.NoError(t, err)
	require.Empty(t, entries)

	// A real secrets/ gets the token.
	require.NoError(t, os.Remove(filepath.Join(taskDir, "secrets")))
	require.NoError(t, writeIdentities(taskDir, alloc, task))
	b, err := os.ReadFile(filepath.Join(taskDir, "secrets", "nomad_token"))
	require.NoError(t, err)
	require.Equal(t, "signed-jwt", string(b))
}
