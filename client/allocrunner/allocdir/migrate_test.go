package allocdir

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func built(t *testing.T, root, id string, tasks ...string) *AllocDir {
	t.Helper()
	d, err := New(root, id)
	require.NoError(t, err)
	require.NoError(t, d.Build(tasks))
	return d
}

func write(t *testing.T, p, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o640))
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

func TestMoveEphemeral(t *testing.T) {
	root := t.TempDir()
	prev := built(t, root, "prev", "web", "gone")
	write(t, filepath.Join(prev.SharedDir(), "data", "db", "state"), "42")
	write(t, filepath.Join(prev.TaskDir("web").LocalDir, "cache"), "warm")
	write(t, filepath.Join(prev.TaskDir("gone").LocalDir, "x"), "only the old group had this task")
	write(t, filepath.Join(prev.TaskDir("web").SecretsDir, "token"), "stays")
	write(t, filepath.Join(prev.LogDir(), "web.stdout.0"), "stays")
	next := built(t, root, "next", "web", "new")

	moved, err := MoveEphemeral(prev, next, []string{"web", "new"})
	require.NoError(t, err)
	require.Equal(t, []string{"alloc/data", "web/local"}, moved, "new has no local/ in prev")
	require.Equal(t, "42", read(t, filepath.Join(next.SharedDir(), "data", "db", "state")))
	require.Equal(t, "warm", read(t, filepath.Join(next.TaskDir("web").LocalDir, "cache")))
	require.DirExists(t, next.TaskDir("new").LocalDir, "a task without previous data keeps its empty local/")
	require.NoFileExists(t, filepath.Join(next.TaskDir("web").SecretsDir, "token"), "secrets do not move")
	require.NoDirExists(t, filepath.Join(prev.SharedDir(), "data"), "moved, not copied")
	require.NoDirExists(t, prev.TaskDir("web").LocalDir)
	require.FileExists(t, filepath.Join(prev.LogDir(), "web.stdout.0"))

	again, err := MoveEphemeral(prev, next, []string{"web"})
	require.NoError(t, err)
	require.Empty(t, again, "nothing left to move")
	require.Equal(t, "42", read(t, filepath.Join(next.SharedDir(), "data", "db", "state")), "a second move keeps the data")
}

func TestMoveEphemeralSkipsSymlinkedDirs(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	prev := built(t, root, "prev", "web")
	data := filepath.Join(prev.SharedDir(), "data")
	require.NoError(t, os.RemoveAll(data))
	require.NoError(t, os.Symlink(outside, data))
	next := built(t, root, "next", "web")
	moved, err := MoveEphemeral(prev, next, []string{"web"})
	require.NoError(t, err)
	require.Equal(t, []string{"web/local"}, moved)
	fi, err := os.Lstat(filepath.Join(next.SharedDir(), "data"))
	require.NoError(t, err)
	require.True(t, fi.IsDir(), "a symlink in place of alloc/data is not carried over")
}

func TestSnapshotRoundTrip(t *testing.T) {
	src := built(t, t.TempDir(), "prev", "web", "gone")
	write(t, filepath.Join(src.SharedDir(), "data", "db", "state"), "42")
	require.NoError(t, os.Chmod(filepath.Join(src.SharedDir(), "data", "db", "state"), 0o600))
	require.NoError(t, os.Symlink("db/state", filepath.Join(src.SharedDir(), "data", "current")))
	write(t, filepath.Join(src.TaskDir("web").LocalDir, "cache"), "warm")
	write(t, filepath.Join(src.TaskDir("gone").LocalDir, "x"), "skipped")
	write(t, filepath.Join(src.TaskDir("web").SecretsDir, "token"), "never sent")
	write(t, filepath.Join(src.LogDir(), "web.stdout.0"), "never sent")
	// A symlink to a file outside the allocation: sent as a symlink, its
	// target's content is never read.
	secret := filepath.Join(t.TempDir(), "secret")
	write(t, secret, "host secret")

	var buf bytes.Buffer
	require.NoError(t, src.WriteSnapshot(&buf, []string{"web", "gone"}))
	names := map[string]bool{}
	tr := tar.NewReader(bytes.NewReader(buf.Bytes()))
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		names[hdr.Name] = true
	}
	require.Equal(t, map[string]bool{
		"alloc/data/": true, "alloc/data/db/": true, "alloc/data/db/state": true, "alloc/data/current": true,
		"web/local/": true, "web/local/cache": true, "gone/local/": true, "gone/local/x": true,
	}, names)

	dst := built(t, t.TempDir(), "next", "web")
	require.NoError(t, dst.RestoreSnapshot(bytes.NewReader(buf.Bytes()), []string{"web"}))
	require.Equal(t, "42", read(t, filepath.Join(dst.SharedDir(), "data", "db", "state")))
	fi, err := os.Stat(filepath.Join(dst.SharedDir(), "data", "db", "state"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.Equal(t, "42", read(t, filepath.Join(dst.SharedDir(), "data", "current")), "the relative symlink is restored")
	require.Equal(t, "warm", read(t, filepath.Join(dst.TaskDir("web").LocalDir, "cache")))
	require.NoDirExists(t, filepath.Join(dst.Dir(), "gone"), "data of a task the replacement lacks is skipped")
	require.NoDirExists(t, dst.Dir()+".migrate", "the staging directory is removed")
}

func TestSnapshotNeverReadsThroughSymlinks(t *testing.T) {
	src := built(t, t.TempDir(), "prev", "web")
	secret := filepath.Join(t.TempDir(), "secret")
	write(t, secret, "host secret")
	require.NoError(t, os.Symlink(secret, filepath.Join(src.SharedDir(), "data", "leak")))
	var buf bytes.Buffer
	require.NoError(t, src.WriteSnapshot(&buf, []string{"web"}))
	require.NotContains(t, buf.String(), "host secret")
}

type entry struct {
	name, link, body string
	typ              byte
}

func archive(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		if e.typ == tar.TypeDir {
			hdr.Mode = 0o755
		}
		require.NoError(t, tw.WriteHeader(hdr))
		if e.typ == tar.TypeReg {
			_, err := tw.Write([]byte(e.body))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func TestRestoreRefusesHostileArchives(t *testing.T) {
	file := func(name string) entry { return entry{name: name, typ: tar.TypeReg, body: "pwned"} }
	dir := func(name string) entry { return entry{name: name, typ: tar.TypeDir} }
	link := func(name, to string) entry { return entry{name: name, link: to, typ: tar.TypeSymlink} }
	cases := []struct {
		name    string
		entries []entry
		want    string
	}{
		{"dot-dot entry", []entry{dir("alloc/data/"), file("alloc/data/../../../escaped")}, "not a clean relative path"},
		{"cleaned dot-dot entry", []entry{file("../escaped")}, "leaves its directory"},
		{"absolute entry", []entry{file("/tmp/escaped")}, "not a clean relative path"},
		{"outside the ephemeral dirs", []entry{file("web/secrets/token")}, "is not under alloc/data"},
		{"the alloc dir's root", []entry{file("escaped")}, "is not under alloc/data"},
		{"absolute symlink, then a file through it", []entry{dir("alloc/data/"), link("alloc/data/etc", "OUTSIDE"), file("alloc/data/etc/escaped")},
			"leaves the allocation directory"},
		{"relative symlink climbing out", []entry{link("alloc/data/up", "../../.."), file("alloc/data/up/escaped")},
			"leaves the allocation directory"},
		{"hard link", []entry{file("alloc/data/a"), {name: "alloc/data/b", link: "/etc/passwd", typ: tar.TypeLink}}, "not a directory, regular file or symlink"},
		{"device", []entry{{name: "alloc/data/null", typ: tar.TypeChar}}, "not a directory, regular file or symlink"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			outside := t.TempDir()
			for i := range tc.entries {
				if tc.entries[i].link == "OUTSIDE" {
					tc.entries[i].link = outside
				}
			}
			root := t.TempDir()
			dst := built(t, root, "next", "web")
			write(t, filepath.Join(dst.SharedDir(), "data", "mine"), "kept")
			err := dst.RestoreSnapshot(bytes.NewReader(archive(t, tc.entries...)), []string{"web"})
			require.ErrorIs(t, err, ErrUnsafeArchive)
			require.ErrorContains(t, err, tc.want)
			require.NoFileExists(t, filepath.Join(outside, "escaped"))
			require.NoFileExists(t, filepath.Join(root, "escaped"))
			require.NoFileExists(t, filepath.Join(filepath.Dir(root), "escaped"))
			require.Equal(t, "kept", read(t, filepath.Join(dst.SharedDir(), "data", "mine")), "a failed restore leaves the directory as it was")
			require.NoDirExists(t, dst.Dir()+".migrate")
		})
	}
}

func TestRestoreTruncatedArchiveLeavesDirUnchanged(t *testing.T) {
	dst := built(t, t.TempDir(), "next", "web")
	write(t, filepath.Join(dst.SharedDir(), "data", "mine"), "kept")
	full := archive(t, entry{name: "alloc/data/big", typ: tar.TypeReg, body: string(bytes.Repeat([]byte("x"), 4096))})
	err := dst.RestoreSnapshot(bytes.NewReader(full[:1024]), []string{"web"})
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrUnsafeArchive)
	require.Equal(t, "kept", read(t, filepath.Join(dst.SharedDir(), "data", "mine")))
	require.NoFileExists(t, filepath.Join(dst.SharedDir(), "data", "big"))
}
