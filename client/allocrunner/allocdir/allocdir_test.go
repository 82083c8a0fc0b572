package allocdir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBuildLayoutAndDestroy(t *testing.T) {
	root := t.TempDir()
	d, err := New(root, "a1")
	require.NoError(t, err)
	require.NoError(t, d.Build([]string{"web", "sidecar"}))
	require.NoError(t, os.WriteFile(filepath.Join(d.TaskDir("web").LocalDir, "keep"), []byte("x"), 0o644))
	require.NoError(t, d.Build([]string{"web", "sidecar"}), "idempotent")

	for _, rel := range []string{
		"a1/alloc/logs", "a1/alloc/data", "a1/alloc/tmp",
		"a1/web/local", "a1/web/secrets", "a1/web/tmp", "a1/sidecar/local", "a1/web/local/keep",
	} {
		_, err := os.Stat(filepath.Join(root, rel))
		require.NoError(t, err, rel)
	}
	fi, err := os.Stat(filepath.Join(root, "a1/alloc/tmp"))
	require.NoError(t, err)
	require.Equal(t, os.ModeSticky|0o777, fi.Mode()&(os.ModeSticky|os.ModePerm))

	p, err := d.LogPath("web", Stdout)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, "a1/alloc/logs/web.stdout.0"), p)
	p, err = d.LogPath("web", Stderr)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, "a1/alloc/logs/web.stderr.0"), p)
	_, err = d.LogPath("web", "stdin")
	require.ErrorContains(t, err, `log stream "stdin"`)

	require.NoError(t, d.Destroy())
	_, err = os.Stat(filepath.Join(root, "a1"))
	require.True(t, os.IsNotExist(err))
	_, err = os.Stat(d.TaskDir("web").PrivateDir)
	require.True(t, os.IsNotExist(err), "the private dirs go with the tree")
	require.NoError(t, d.Destroy(), "idempotent")
}

// TestPrivateDirOutsideTheTree: a task's private dir is 0700, outside the
// allocation's tree (so outside every task's dir and alloc fs), and an
// allocation cannot be named after the private root.
func TestPrivateDirOutsideTheTree(t *testing.T) {
	root := t.TempDir()
	d, err := New(root, "a1")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(root, PrivateRootName, "a1", "web"), 0o777))
	require.NoError(t, d.Build([]string{"web"}))
	td := d.TaskDir("web")
	require.Equal(t, filepath.Join(root, PrivateRootName, "a1", "web"), td.PrivateDir)
	rel, err := filepath.Rel(d.Dir(), td.PrivateDir)
	require.NoError(t, err)
	require.True(t, rel == ".." || len(rel) > 3 && rel[:3] == "../", "outside %s: %s", d.Dir(), rel)
	for _, p := range []string{filepath.Join(root, PrivateRootName), filepath.Join(root, PrivateRootName, "a1"), td.PrivateDir} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "%s (a loosened mode is set again)", p)
	}
	_, err = New(root, PrivateRootName)
	require.ErrorIs(t, err, ErrBadName)
}

func TestBadNames(t *testing.T) {
	_, err := New(t.TempDir(), "../x")
	require.ErrorIs(t, err, ErrBadName)
	_, err = New("", "a")
	require.Error(t, err)
	d, err := New(t.TempDir(), "a")
	require.NoError(t, err)
	for _, name := range []string{"", ".", "..", "a/b", "/abs"} {
		require.ErrorIs(t, d.Build([]string{name}), ErrBadName, name)
		_, err := d.LogPath(name, Stdout)
		require.ErrorIs(t, err, ErrBadName, name)
	}
}
