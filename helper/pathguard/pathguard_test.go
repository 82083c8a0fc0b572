package pathguard

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// tree builds, under a temp dir, an allocation directory "alloc" with a
// task dir and links planted inside it, plus a sibling "alloc-x" and an
// "outside" directory, and returns the temp dir (resolved).
func tree(t *testing.T) string {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	for _, d := range []string{"alloc/alloc/data", "alloc/web/local", "alloc-x/data", "outside/etc"} {
		require.NoError(t, os.MkdirAll(filepath.Join(base, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(base, "alloc/web/local/file"), nil, 0o644))
	links := map[string]string{
		"alloc/alloc/data/root":     "/",
		"alloc/alloc/data/out":      filepath.Join(base, "outside"),
		"alloc/alloc/data/rel-out":  "../../../outside",
		"alloc/alloc/data/chain1":   "chain2",
		"alloc/alloc/data/chain2":   "../../web/chain3",
		"alloc/web/chain3":          filepath.Join(base, "outside/etc"),
		"alloc/alloc/data/in":       "../../web/local",
		"alloc/alloc/data/abs-in":   filepath.Join(base, "alloc/web/local"),
		"alloc/alloc/data/loop":     "loop",
		"alloc/alloc/data/x-prefix": filepath.Join(base, "alloc-x/data"),
		"alloc/alloc/data/dotdot":   "root/..",
	}
	for link, target := range links {
		require.NoError(t, os.Symlink(target, filepath.Join(base, link)))
	}
	return base
}

func TestWithinAny(t *testing.T) {
	base := tree(t)
	root := filepath.Join(base, "alloc")
	task := filepath.Join(root, "web")
	// Paths are concatenated, not filepath.Join-ed: Join would clean the
	// ".." away before Within sees it.
	cases := []struct {
		name    string
		path    string
		want    string // resolved path; "" = no check
		exists  bool
		outside bool
	}{
		{"the alloc dir itself", root, root, true, false},
		{"a task's local dir", filepath.Join(task, "local"), filepath.Join(task, "local"), true, false},
		{"a file", filepath.Join(task, "local/file"), filepath.Join(task, "local/file"), true, false},
		{"missing inside", filepath.Join(task, "local/new/deeper"), filepath.Join(task, "local/new/deeper"), false, false},
		{"host root", "/", "/", true, true},
		{"an absolute host path", "/etc", "", true, true},
		{"../ escape from the task dir", task + "/../../../../../../etc", "/etc", true, true},
		{"../ escape to the alloc dir's parent", task + "/../..", base, true, true},
		{"../ that stays inside", task + "/../alloc/data", filepath.Join(root, "alloc/data"), true, false},
		{"missing then ../ out", task + "/nope/../../../outside", filepath.Join(base, "outside"), false, true},
		{"prefix trick", filepath.Join(base, "alloc-x/data"), filepath.Join(base, "alloc-x/data"), true, true},
		{"link to /", filepath.Join(root, "alloc/data/root"), "/", true, true},
		{"below a link to /", filepath.Join(root, "alloc/data/root/etc"), "/etc", true, true},
		{"link to an absolute dir outside", filepath.Join(root, "alloc/data/out"), filepath.Join(base, "outside"), true, true},
		{"relative link out", filepath.Join(root, "alloc/data/rel-out"), filepath.Join(base, "outside"), true, true},
		{"chain of links out", filepath.Join(root, "alloc/data/chain1"), filepath.Join(base, "outside/etc"), true, true},
		{"relative link inside", filepath.Join(root, "alloc/data/in"), filepath.Join(task, "local"), true, false},
		{"absolute link inside", filepath.Join(root, "alloc/data/abs-in/file"), filepath.Join(task, "local/file"), true, false},
		{"link to the prefix sibling", filepath.Join(root, "alloc/data/x-prefix"), filepath.Join(base, "alloc-x/data"), true, true},
		{"link then .. is the target's parent", root + "/alloc/data/root/../etc", "/etc", true, true},
		{"link whose target ends in ..", filepath.Join(root, "alloc/data/dotdot"), "/", true, true},
		{"below a file", filepath.Join(task, "local/file/x"), filepath.Join(task, "local/file/x"), false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := WithinAny(c.path, root)
			if c.outside {
				require.ErrorIs(t, err, ErrOutside)
				require.Contains(t, err.Error(), res.Path)
			} else {
				require.NoError(t, err)
			}
			if c.want != "" {
				require.Equal(t, c.want, res.Path)
			}
			require.Equal(t, c.exists, res.Exists)
		})
	}
}

func TestWithinAnyErrors(t *testing.T) {
	base := tree(t)
	root := filepath.Join(base, "alloc")
	_, err := WithinAny(filepath.Join(root, "alloc/data/loop"), root)
	require.ErrorIs(t, err, ErrTooManyLinks)
	_, err = WithinAny("relative/path", root)
	require.Error(t, err)
	_, err = WithinAny(root, filepath.Join(base, "missing-root"))
	require.ErrorContains(t, err, "does not exist")
	_, err = WithinAny(root)
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrOutside))

	// A root reached through a symlink is resolved before the comparison.
	link := filepath.Join(base, "alloc-link")
	require.NoError(t, os.Symlink(root, link))
	res, err := WithinAny(filepath.Join(link, "web/local"), link)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, "web/local"), res.Path)
}

func TestInside(t *testing.T) {
	for _, c := range []struct {
		root, p string
		want    bool
	}{
		{"/a", "/a", true}, {"/a", "/a/b", true}, {"/a", "/a-x", false}, {"/a", "/ab", false},
		{"/a", "/", false}, {"/a/b", "/a", false}, {"/", "/anything", true}, {"/a", "/a/..b", true},
	} {
		require.Equal(t, c.want, Inside(c.root, c.p), "%s in %s", c.p, c.root)
	}
}
