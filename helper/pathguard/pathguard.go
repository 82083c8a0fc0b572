package pathguard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxLinks bounds the symlinks followed by one Resolve, as the kernel's
// ELOOP does.
const maxLinks = 255

var (
	// ErrOutside is wrapped by Within's error for a path that resolves
	// outside every root.
	ErrOutside = errors.New("pathguard: path resolves outside the allowed directory")
	// ErrTooManyLinks is wrapped by Resolve's error for a symlink loop.
	ErrTooManyLinks = errors.New("pathguard: too many levels of symbolic links")
)

// Resolution is the result of Resolve.
type Resolution struct {
	// Path is the absolute path with every symlink followed and no "." or
	// ".." left.
	Path string
	// Exists is false when some component of Path does not exist (those
	// after the first missing one were appended as written).
	Exists bool
}

// Resolve follows every symlink of the absolute path p (see the package
// doc). It fails for a relative p, a symlink loop, or a file system error
// other than a missing component.
func Resolve(p string) (Resolution, error) {
	if !filepath.IsAbs(p) {
		return Resolution{}, fmt.Errorf("pathguard: %q is not an absolute path", p)
	}
	resolved := string(filepath.Separator)
	rest := components(p)
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		if c == ".." {
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, os.ErrNotExist):
			// Nothing below a missing directory exists: apply the rest
			// lexically.
			out := filepath.Join(append([]string{next}, rest...)...)
			return Resolution{Path: out, Exists: false}, nil
		case err != nil:
			return Resolution{}, fmt.Errorf("pathguard: %w", err)
		case fi.Mode()&os.ModeSymlink != 0:
			links++
			if links > maxLinks {
				return Resolution{}, fmt.Errorf("%w: %s", ErrTooManyLinks, p)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return Resolution{}, fmt.Errorf("pathguard: %w", err)
			}
			if filepath.IsAbs(target) {
				resolved = string(filepath.Separator)
			}
			rest = append(components(target), rest...)
		case len(rest) > 0 && !fi.IsDir():
			// The kernel answers ENOTDIR; nothing below a file exists.
			out := filepath.Join(append([]string{next}, rest...)...)
			return Resolution{Path: out, Exists: false}, nil
		default:
			resolved = next
		}
	}
	return Resolution{Path: resolved, Exists: true}, nil
}

// components splits p into its names, dropping empty ones and ".".
func components(p string) []string {
	var out []string
	for _, c := range strings.Split(p, string(filepath.Separator)) {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// Inside reports whether the clean absolute path p is root or below it.
func Inside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)))
}

// Within resolves the absolute path p and returns its resolution when it
// is inside one of roots (each resolved too; a root that does not exist
// is an error). A path outside every root gives an error wrapping
// ErrOutside that names the resolved path.
func Within(p string, roots ...string) (Resolution, error) {
	if len(roots) == 0 {
		return Resolution{}, errors.New("pathguard: no root given")
	}
	res, err := Resolve(p)
	if err != nil {
		return Resolution{}, err
	}
	for _, root := range roots {
		r, err := Resolve(root)
		if err != nil {
			return Resolution{}, err
		}
		if !r.Exists {
			return Resolution{}, fmt.Errorf("pathguard: root %s does not exist", root)
		}
		if Inside(r.Path, res.Path) {
			return res, nil
		}
	}
	return res, fmt.Errorf("%w: %s resolves to %s", ErrOutside, p, res.Path)
}
