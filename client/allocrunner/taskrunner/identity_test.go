package taskrunner

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func TestIdentityOwner(t *testing.T) {
	lookup := func(name string) (*user.User, error) {
		switch name {
		case "nobody":
			return &user.User{Uid: "65534", Gid: "65534"}, nil
		case "odd":
			return &user.User{Uid: "x", Gid: "1"}, nil
		}
		return nil, user.UnknownUserError(name)
	}
	for _, tc := range []struct {
		user string
		want fileOwner
	}{
		{"", fileOwner{uid: -1, gid: -1, mode: 0o600}},
		{"nobody", fileOwner{uid: 65534, gid: 65534, mode: 0o600}},
		{"image-only-user", fileOwner{uid: -1, gid: -1, mode: 0o644}},
		{"odd", fileOwner{uid: -1, gid: -1, mode: 0o644}},
	} {
		require.Equal(t, tc.want, identityOwner(tc.user, lookup), tc.user)
	}
}

// A token file of a task run as a host user is 0600 and that user's.
func TestWriteIdentities_OwnedByTheTaskUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody on this host")
	}
	dir := t.TempDir()
	task := &structs.Task{Name: "t", User: "nobody", Identity: &structs.WorkloadIdentity{File: true}}
	alloc := &structs.Allocation{SignedIdentities: map[string]string{"t": "jwt"}}
	require.NoError(t, writeIdentities(dir, alloc, task))
	fi, err := os.Stat(filepath.Join(dir, "secrets", "nomad_token"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	st, ok := fi.Sys().(*syscall.Stat_t)
	require.True(t, ok)
	require.Equal(t, nobody.Uid, itoa(st.Uid))
	require.Equal(t, nobody.Gid, itoa(st.Gid))

	task.User = ""
	require.NoError(t, writeIdentities(dir, alloc, task))
	fi, err = os.Stat(filepath.Join(dir, "secrets", "nomad_token"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.Equal(t, uint32(0), fi.Sys().(*syscall.Stat_t).Uid)
}

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
