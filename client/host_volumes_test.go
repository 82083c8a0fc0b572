package client

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// linkTree makes, under a fresh directory (itself without symlinks):
// data/ (a directory), data/f (a file), elsewhere/ (a directory),
// link -> elsewhere, rel -> ../<base>/data (relative), chain -> link,
// filelink -> data/f, dangling -> missing.
func linkTree(t *testing.T) string {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(base, "data"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(base, "elsewhere"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base, "data", "f"), nil, 0o600))
	for link, target := range map[string]string{
		"link": filepath.Join(base, "elsewhere"), "rel": filepath.Join("..", filepath.Base(base), "data"),
		"chain": filepath.Join(base, "link"), "filelink": filepath.Join(base, "data", "f"),
		"dangling": filepath.Join(base, "missing"),
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(base, link)))
	}
	return base
}

func TestNormalizeHostVolumes(t *testing.T) {
	base := linkTree(t)
	for _, tc := range []struct {
		name, path string
		readOnly   bool
		want, err  string // want relative to base
	}{
		{name: "directory, cleaned", path: base + "/data/./", want: "data"},
		{name: "file", path: base + "/data/f", readOnly: true, want: "data/f"},
		{name: "symlink: the volume is where it points", path: base + "/link", want: "elsewhere"},
		{name: "relative symlink", path: base + "/rel", want: "data"},
		{name: "chain of symlinks", path: base + "/chain", want: "elsewhere"},
		{name: "symlink inside the path", path: base + "/link/../data", want: "data"},
		{name: "symlink to a file", path: base + "/filelink", want: "data/f"},
		{name: "dangling symlink", path: base + "/dangling", err: `host_volume "v": path: lstat ` + base + "/missing: no such file or directory"},
		{name: "missing", path: base + "/gone", err: `host_volume "v": path: lstat ` + base + "/gone: no such file or directory"},
		{name: "relative", path: "data", err: `host_volume "v": path "data" must be absolute`},
		{name: "none", err: `host_volume "v": path is required`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := normalizeHostVolumes(map[string]*structs.ClientHostVolumeConfig{"v": {Path: tc.path, ReadOnly: tc.readOnly}})
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, map[string]*structs.ClientHostVolumeConfig{
				"v": {Path: filepath.Join(base, tc.want), ReadOnly: tc.readOnly},
			}, got)
		})
	}
}

func TestResolveRegisteredPath(t *testing.T) {
	base := linkTree(t)
	for _, d := range []string{"agent/alloc", "agent-other"} {
		require.NoError(t, os.MkdirAll(filepath.Join(base, d), 0o755))
	}
	require.NoError(t, os.Symlink(filepath.Join(base, "agent", "alloc"), filepath.Join(base, "agentlink")))
	for _, tc := range []struct {
		name, path, want, err string
	}{
		{name: "directory", path: base + "/data", want: "data"},
		{name: "symlink to a directory", path: base + "/link", want: "elsewhere"},
		{name: "chain", path: base + "/chain/", want: "elsewhere"},
		{name: "file", path: base + "/data/f", err: base + "/data/f is not a directory"},
		{name: "symlink to a file", path: base + "/filelink", err: base + "/filelink (" + base + "/data/f) is not a directory"},
		{name: "dangling", path: base + "/dangling", err: "lstat " + base + "/missing: no such file or directory"},
		{name: "the data directory", path: base + "/agent", err: base + "/agent is in the client's data directory " + base + "/agent"},
		{name: "in the data directory", path: base + "/agent/alloc", err: base + "/agent/alloc is in the client's data directory " + base + "/agent"},
		{name: "a link into the data directory", path: base + "/agentlink", err: base + "/agentlink is in the client's data directory " + base + "/agent"},
		{name: "beside the data directory", path: base + "/agent-other", want: "agent-other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveRegisteredPath(tc.path, base+"/agent")
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, filepath.Join(base, tc.want), got)
		})
	}
}
