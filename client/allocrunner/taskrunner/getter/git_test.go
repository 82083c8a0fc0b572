package getter

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gitRepo makes a repository with files (name → content; a content
// starting with "->" is a symlink to the rest) and returns its path.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git binary")
	}
	repo := t.TempDir()
	for name, content := range files {
		p := filepath.Join(repo, name)
		if target, ok := strings.CutPrefix(content, "->"); ok {
			require.NoError(t, os.Symlink(target, p))
			continue
		}
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init"},
		{"tag", "v1"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	return repo
}

func TestFetch_GitRepository(t *testing.T) {
	repo := gitRepo(t, map[string]string{"README": "templates v1\n"})
	d := newDirs(t)
	r := d.req("git::file://"+repo, "local/templates")
	r.Options = map[string]string{"ref": "v1"}
	require.NoError(t, Fetch(context.Background(), nil, r))
	assert.Equal(t, "templates v1\n", readFile(t, filepath.Join(d.task, "local", "templates", "README")))
}

func TestFetch_GitSymlinkEscapingFails(t *testing.T) {
	repo := gitRepo(t, map[string]string{"README": "x", "passwd": "->/etc/passwd"})
	d := newDirs(t)
	err := Fetch(context.Background(), nil, d.req("git::file://"+repo, "local/repo"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "symlink that escapes the alloc directory")
}

func TestFetch_Chown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	archive := tgz(t, tarEntry{name: "d/", dir: true}, tarEntry{name: "d/f", body: "x"})
	srv := newServer(t, map[string][]byte{"/a.tgz": archive})
	d := newDirs(t)
	r := d.req(srv.URL+"/a.tgz", "local/app")
	r.Owner = &Owner{UID: 65534, GID: 65534}
	require.NoError(t, Fetch(context.Background(), nil, r))
	for _, p := range []string{"", "d", "d/f"} {
		uid, gid := ownerOf(t, filepath.Join(d.task, "local", "app", p))
		assert.Equal(t, 65534, uid, p)
		assert.Equal(t, 65534, gid, p)
	}
	uid, _ := ownerOf(t, filepath.Join(d.task, "local"))
	assert.Equal(t, 0, uid, "only what was fetched changes owner")
}
