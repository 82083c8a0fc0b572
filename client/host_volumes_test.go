package client

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func TestNormalizeHostVolumes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	got, err := normalizeHostVolumes(map[string]*structs.ClientHostVolumeConfig{
		"dir":  {Path: dir + "/./"},
		"file": {Path: file, ReadOnly: true},
	})
	require.NoError(t, err)
	require.Equal(t, map[string]*structs.ClientHostVolumeConfig{
		"dir": {Path: dir}, "file": {Path: file, ReadOnly: true},
	}, got)

	_, err = normalizeHostVolumes(map[string]*structs.ClientHostVolumeConfig{
		"gone": {Path: filepath.Join(dir, "missing")},
		"rel":  {Path: "data"},
		"none": {},
	})
	require.ErrorContains(t, err, `host_volume "gone": stat `+filepath.Join(dir, "missing"))
	require.ErrorContains(t, err, `host_volume "rel": path "data" must be absolute`)
	require.ErrorContains(t, err, `host_volume "none": path is required`)
}
