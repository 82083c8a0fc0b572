package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
)

var (
	// ErrImageNotFound is wrapped by ImageID for an image that is not
	// present locally.
	ErrImageNotFound = errors.New("docker: image not found")
	// ErrImageInUse is matched (errors.Is) by the *ImageInUseError that
	// RemoveImage returns for an image a container still uses; it also has
	// the errdefs Conflict() marker method.
	ErrImageInUse = errors.New("docker: image is in use")
)

// ImageInUseError is returned by RemoveImage when a container (running or
// not) still uses the image.
type ImageInUseError struct {
	ImageID string
	Err     error // the daemon's error
}

func (e *ImageInUseError) Error() string {
	return fmt.Sprintf("image %s is in use: %v", e.ImageID, e.Err)
}

func (e *ImageInUseError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrImageInUse) true.
func (e *ImageInUseError) Is(target error) bool { return target == ErrImageInUse }

// Conflict marks the error as a conflict (the errdefs convention), so that
// callers that do not import this package recognise "in use".
func (*ImageInUseError) Conflict() {}

// ImageID returns the ID ("sha256:...") of a local image by reference
// ("web:v2", "127.0.0.1:5000/web@sha256:...") or ID; the error wraps
// ErrImageNotFound when the image is not present.
func (d *Driver) ImageID(ctx context.Context, ref string) (string, error) {
	cli, err := d.client()
	if err != nil {
		return "", err
	}
	ins, err := cli.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("%w: %s", ErrImageNotFound, ref)
	}
	if err != nil {
		return "", fmt.Errorf("docker: inspecting image %s: %w", ref, err)
	}
	return ins.ID, nil
}

// RemoveImage removes a local image by ID (or reference), without force:
// an image used by a container gives an *ImageInUseError (errors.Is
// ErrImageInUse); an image that is already gone is not an error. Removing
// by ID untags every reference of the image.
func (d *Driver) RemoveImage(ctx context.Context, imageID string) error {
	cli, err := d.client()
	if err != nil {
		return err
	}
	_, err = cli.ImageRemove(ctx, imageID, image.RemoveOptions{Force: false, PruneChildren: true})
	if cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "multiple repositories") {
		// Tagged more than once: the daemon wants each reference removed
		// (still without force, so a container using it stops us).
		err = d.removeReferences(ctx, imageID)
	}
	switch {
	case err == nil, cerrdefs.IsNotFound(err):
		return nil
	case cerrdefs.IsConflict(err):
		return &ImageInUseError{ImageID: imageID, Err: err}
	}
	return fmt.Errorf("docker: removing image %s: %w", imageID, err)
}

// removeReferences removes every tag and digest reference of an image; the
// last removal deletes it.
func (d *Driver) removeReferences(ctx context.Context, imageID string) error {
	cli, err := d.client()
	if err != nil {
		return err
	}
	ins, err := cli.ImageInspect(ctx, imageID)
	if err != nil {
		return err
	}
	refs := append(append([]string(nil), ins.RepoTags...), ins.RepoDigests...)
	for _, ref := range refs {
		if _, err := cli.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
			return err
		}
	}
	_, err = cli.ImageRemove(ctx, imageID, image.RemoveOptions{PruneChildren: true})
	return err
}
