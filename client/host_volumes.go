package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/drover-project/drover/nomad/structs"
)

// normalizeHostVolumes copies the configured host volumes with their paths
// cleaned; each must be named, absolute and exist (a file or directory),
// as in Nomad, whose client refuses to start otherwise.
func normalizeHostVolumes(in map[string]*structs.ClientHostVolumeConfig) (map[string]*structs.ClientHostVolumeConfig, error) {
	if len(in) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(in))
	for n := range in {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make(map[string]*structs.ClientHostVolumeConfig, len(in))
	var errs []error
	for _, n := range names {
		v := in[n]
		switch {
		case n == "":
			errs = append(errs, errors.New("host_volume: a volume has no name"))
			continue
		case v == nil || v.Path == "":
			errs = append(errs, fmt.Errorf("host_volume %q: path is required", n))
			continue
		case !filepath.IsAbs(v.Path):
			errs = append(errs, fmt.Errorf("host_volume %q: path %q must be absolute", n, v.Path))
			continue
		}
		if _, err := os.Stat(v.Path); err != nil {
			errs = append(errs, fmt.Errorf("host_volume %q: %w", n, err))
			continue
		}
		c := *v
		c.Path = filepath.Clean(v.Path)
		out[n] = &c
	}
	return out, errors.Join(errs...)
}

// copyHostVolumes returns a copy of a node's host volumes.
func copyHostVolumes(in map[string]*structs.ClientHostVolumeConfig) map[string]*structs.ClientHostVolumeConfig {
	if in == nil {
		return nil
	}
	out := make(map[string]*structs.ClientHostVolumeConfig, len(in))
	for n, v := range in {
		c := *v
		out[n] = &c
	}
	return out
}
