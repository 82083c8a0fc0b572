package imageresolve

import (
	"fmt"
	"strings"

	"github.com/distribution/reference"
)

// Ref is a parsed image reference as a user wrote it.
type Ref struct {
	// Written is the reference without its digest, as written (trimmed).
	Written string
	// Registry is the registry host ("docker.io" for Docker Hub).
	Registry string
	// Repository is the fully-qualified repository ("docker.io/library/nginx").
	Repository string
	// Tag is the tag; "latest" when none is written.
	Tag string
	// TagWritten reports whether the tag was written.
	TagWritten bool
	// Digest is the digest written after "@", or "".
	Digest string
}

// Parse parses a Docker image reference ("app", "host:5000/app:stable",
// "app:stable@sha256:…", "app@sha256:…").
func Parse(image string) (Ref, error) {
	image = strings.TrimSpace(image)
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return Ref{}, fmt.Errorf("invalid image reference %q: %w", image, err)
	}
	r := Ref{Registry: reference.Domain(named), Repository: named.Name(), Tag: "latest", Written: image}
	if t, ok := named.(reference.Tagged); ok {
		r.Tag, r.TagWritten = t.Tag(), true
	}
	if d, ok := named.(reference.Digested); ok {
		r.Digest = d.Digest().String()
		r.Written = image[:strings.LastIndex(image, "@")]
	}
	return r, nil
}

// TagRef is the reference the registry is asked about: the written name with
// its tag (":latest" added when none is written), without a digest.
func (r Ref) TagRef() string {
	if r.TagWritten {
		return r.Written
	}
	return r.Written + ":" + r.Tag
}

// Pinned returns the written name and tag with digest appended:
// "name:tag@sha256:…".
func (r Ref) Pinned(digest string) string { return r.TagRef() + "@" + digest }
