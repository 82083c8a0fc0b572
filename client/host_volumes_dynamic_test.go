package client

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func TestPlanHostVolumes(t *testing.T) {
	const a, b, c = "6f1c8e9a-0000-4000-8000-00000000000a", "6f1c8e9a-0000-4000-8000-00000000000b", "6f1c8e9a-0000-4000-8000-00000000000c"
	va, vb := &structs.HostVolume{ID: a, Name: "x"}, &structs.HostVolume{ID: b, Name: "y"}
	reg := &structs.HostVolume{ID: c, Name: "z", HostPath: "/srv/z"}
	cases := []struct {
		name    string
		vols    []*structs.HostVolume
		present []string
		create  []*structs.HostVolume
		remove  []string
	}{
		{"nothing", nil, nil, nil, nil},
		{"new volumes", []*structs.HostVolume{va, vb}, nil, []*structs.HostVolume{va, vb}, nil},
		{"already there", []*structs.HostVolume{va}, []string{a}, nil, nil},
		{"deleted", []*structs.HostVolume{va}, []string{a, c}, nil, []string{c}},
		{"not the plugin's", nil, []string{"lost+found", "notes"}, nil, nil},
		{"registered: nothing to create", []*structs.HostVolume{reg}, nil, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := planHostVolumes(tc.vols, tc.present)
			require.Equal(t, tc.create, got.create)
			require.Equal(t, tc.remove, got.remove)
		})
	}
}

func TestNodeHostVolumesAndMkdir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hv")
	ro := &structs.HostVolume{ID: "6f1c8e9a-0000-4000-8000-00000000000a", Name: "certs", Parameters: map[string]string{"mode": "0750"},
		RequestedCapabilities: []*structs.HostVolumeCapability{{AccessMode: structs.HostVolumeAccessModeSingleNodeReader, AttachmentMode: "file-system"}}}
	rw := &structs.HostVolume{ID: "6f1c8e9a-0000-4000-8000-00000000000b", Name: "data",
		RequestedCapabilities: []*structs.HostVolumeCapability{{AccessMode: structs.HostVolumeAccessModeSingleNodeWriter, AttachmentMode: "file-system"}}}
	clash := &structs.HostVolume{ID: "6f1c8e9a-0000-4000-8000-00000000000c", Name: "static"}
	require.NoError(t, mkdirCreate(dir, ro))
	require.NoError(t, mkdirCreate(dir, rw))
	require.NoError(t, mkdirCreate(dir, rw), "creating again is a no-op")
	fi, err := os.Stat(filepath.Join(dir, ro.ID))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o750), fi.Mode().Perm())
	fi, err = os.Stat(filepath.Join(dir, rw.ID))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm(), "the default mode")
	require.ErrorContains(t, mkdirCreate(dir, &structs.HostVolume{ID: "x", Parameters: map[string]string{"mode": "rwx"}}), `mode "rwx" is not an octal mode`)

	present, err := hostVolumeDirs(dir)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{ro.ID, rw.ID}, present)
	static := map[string]*structs.ClientHostVolumeConfig{"static": {Path: "/srv/static"}}
	got := nodeHostVolumes(static, []*structs.HostVolume{ro, rw, clash}, map[string]string{
		ro.ID: filepath.Join(dir, ro.ID), rw.ID: filepath.Join(dir, rw.ID), clash.ID: filepath.Join(dir, clash.ID)})
	require.Equal(t, map[string]*structs.ClientHostVolumeConfig{
		"static": {Path: "/srv/static"},
		"certs":  {Path: filepath.Join(dir, ro.ID), ReadOnly: true, ID: ro.ID},
		"data":   {Path: filepath.Join(dir, rw.ID), ID: rw.ID},
	}, got)
	require.Equal(t, map[string]*structs.ClientHostVolumeConfig{"static": {Path: "/srv/static"}},
		nodeHostVolumes(static, []*structs.HostVolume{rw}, map[string]string{}), "a volume not created yet is not offered")
}

// A registered volume is offered at its host_path with every symlink
// followed, and a plugin directory that is a registered volume's (as
// written or once resolved) is never removed.
func TestApplyHostVolumesRegisteredPaths(t *testing.T) {
	const regID, goneID = "6f1c8e9a-0000-4000-8000-0000000000a1", "6f1c8e9a-0000-4000-8000-0000000000a2"
	for _, tc := range []struct {
		name    string
		host    func(base string) string // the registered host_path
		offered func(base string) string // its node path; "" when not offered
		keep    bool                     // <hv>/<goneID> is still there
	}{
		{name: "directory", host: func(b string) string { return b + "/data" }, offered: func(b string) string { return b + "/data" }},
		{name: "symlink", host: func(b string) string { return b + "/link" }, offered: func(b string) string { return b + "/elsewhere" }},
		{name: "symlink into a plugin directory", host: func(b string) string { return b + "/tohv" },
			offered: func(b string) string { return b + "/hv/" + goneID }, keep: true},
		{name: "symlink to a file", host: func(b string) string { return b + "/filelink" }, offered: func(string) string { return "" }},
		{name: "dangling symlink", host: func(b string) string { return b + "/dangling" }, offered: func(string) string { return "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := linkTree(t)
			hv := filepath.Join(base, "hv")
			require.NoError(t, os.MkdirAll(filepath.Join(hv, goneID), 0o755))
			require.NoError(t, os.Symlink(filepath.Join(hv, goneID), filepath.Join(base, "tohv")))
			c := &Client{cfg: &Config{HostVolumesDir: hv}, logger: hclog.NewNullLogger(), node: &structs.Node{}, reregister: make(chan struct{}, 1)}
			reg := &structs.HostVolume{ID: regID, Name: "reg", HostPath: tc.host(base),
				RequestedCapabilities: []*structs.HostVolumeCapability{{AccessMode: structs.HostVolumeAccessModeSingleNodeWriter, AttachmentMode: "file-system"}}}
			require.NoError(t, c.applyHostVolumes([]*structs.HostVolume{reg}))
			var want map[string]*structs.ClientHostVolumeConfig
			if p := tc.offered(base); p != "" {
				want = map[string]*structs.ClientHostVolumeConfig{"reg": {Path: p, ID: regID}}
			}
			require.Equal(t, want, c.node.HostVolumes)
			_, err := os.Stat(filepath.Join(hv, goneID))
			require.Equal(t, tc.keep, err == nil, "plugin directory %s kept: %v", goneID, err)
		})
	}
}
