package getter

import (
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func ownerOf(t *testing.T, p string) (uid, gid int) {
	t.Helper()
	fi, err := os.Lstat(p)
	require.NoError(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid)
}
