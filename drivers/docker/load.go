package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/distribution/reference"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/helper/pathguard"
)

// loadTimeout bounds a docker load of an image tarball.
var loadTimeout = 5 * time.Minute

// loadPath resolves the task's load tarball (relative to the task dir),
// following every symlink, and refuses one outside the allocation
// directory (an unrecoverable *PolicyError): a job may load only what its
// allocation holds.
func loadPath(cfg *drivers.TaskConfig, tc *taskConfig) (string, error) {
	if cfg.TaskDir == "" {
		return "", fmt.Errorf("load = %q: the task has no directory to load from", tc.Keys.Load)
	}
	p := cfg.TaskDir + string(os.PathSeparator) + tc.Keys.Load // not Join: see userBinds
	res, err := pathguard.WithinAny(p, allocRoots(cfg)...)
	switch {
	case errors.Is(err, pathguard.ErrOutside):
		return "", drivers.NewRecoverableError(fmt.Errorf("load = %q: %s resolves to %s, outside the allocation directory", tc.Keys.Load, p, res.Path), false)
	case err != nil:
		return "", drivers.NewRecoverableError(fmt.Errorf("load = %q: %w", tc.Keys.Load, err), false)
	}
	return res.Path, nil
}

// loadRef is the reference a loaded image is found by: name:tag
// (":latest" when no tag is given). A digest the servers pinned is
// dropped: a tarball's image has no registry digest.
func loadRef(img string) (string, error) {
	named, err := reference.ParseNormalizedNamed(img)
	if err != nil {
		return "", err
	}
	if t, ok := named.(reference.Tagged); ok {
		c, err := reference.WithTag(reference.TrimNamed(named), t.Tag())
		if err != nil {
			return "", err
		}
		return reference.FamiliarString(c), nil
	}
	return reference.FamiliarString(reference.TagNameOnly(reference.TrimNamed(named))), nil
}

// loadImage runs docker load on the task's tarball (every start, so the
// container runs what the allocation holds now) and returns the ID of
// the image the task names, which the tarball must contain.
func (d *Driver) loadImage(ctx context.Context, cfg *drivers.TaskConfig, tc *taskConfig) (string, error) {
	path, err := loadPath(cfg, tc)
	if err != nil {
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		// A prestart task may still be writing it.
		return "", drivers.NewRecoverableError(fmt.Errorf("load = %q: %w", tc.Keys.Load, err), true)
	}
	defer f.Close()
	cli, err := d.client()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, loadTimeout)
	defer cancel()
	resp, err := cli.ImageLoad(ctx, f)
	if err != nil {
		return "", daemonError(fmt.Errorf("docker: loading %s: %w", tc.Keys.Load, cleanDaemonError(err)))
	}
	defer resp.Body.Close()
	if err := readPullStream(resp.Body, func(pullMessage) {}); err != nil {
		return "", drivers.NewRecoverableError(fmt.Errorf("docker: loading %s: %w", tc.Keys.Load, err), false)
	}
	ref, err := loadRef(tc.Image)
	if err != nil {
		return "", err
	}
	id, err := d.ImageID(ctx, ref)
	if errors.Is(err, ErrImageNotFound) {
		return "", drivers.NewRecoverableError(fmt.Errorf("load = %q: the tarball has no image %s", tc.Keys.Load, ref), false)
	}
	return id, err
}
