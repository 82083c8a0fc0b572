package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/drover-project/drover/nomad/structs"
)

// normalizeHostVolumes copies the configured host volumes with their paths
// resolved (resolveHostPath: every symlink followed, so the volume is
// offered and mounted where the link pointed when the client started, and
// a link changed later cannot move it); each must be named, absolute and
// exist (a file or directory), as in Nomad, whose client refuses to start
// otherwise.
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
		resolved, err := resolveHostPath(v.Path)
		if err != nil {
			errs = append(errs, fmt.Errorf("host_volume %q: path: %w", n, err))
			continue
		}
		c := *v
		c.Path = resolved
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

// resolveHostPath returns the absolute path p with every symlink in it
// followed (filepath.EvalSymlinks), cleaned: the file or directory a host
// volume really is. It is an error when p or a link in it leads nowhere.
func resolveHostPath(p string) (string, error) {
	return filepath.EvalSymlinks(p) // it lstats every component
}

// resolveRegisteredPath is resolveHostPath for a registered volume's
// host_path, which must lead to a directory outside the client's data
// directory dataDir (its state and every allocation's directory, secrets
// included: a volume registered through the API must not hand them to a
// job).
func resolveRegisteredPath(p, dataDir string) (string, error) {
	resolved, err := resolveHostPath(p)
	if err != nil {
		return "", err
	}
	if dataDir != "" {
		if realData, err := filepath.EvalSymlinks(dataDir); err == nil {
			if rel, err := filepath.Rel(realData, resolved); err == nil && (rel == "." || !strings.HasPrefix(rel, "..")) {
				return "", fmt.Errorf("%s is in the client's data directory %s", p, dataDir)
			}
		}
	}
	if fi, err := os.Stat(resolved); err != nil {
		return "", err
	} else if !fi.IsDir() {
		if resolved != filepath.Clean(p) {
			return "", fmt.Errorf("%s (%s) is not a directory", p, resolved)
		}
		return "", fmt.Errorf("%s is not a directory", p)
	}
	return resolved, nil
}
