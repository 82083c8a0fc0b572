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

// WithinAny resolves the absolute path p and returns its resolution when
// it is inside one of roots (each resolved too; a root that does not exist
// is an error). A path outside every root gives an error wrapping
// ErrOutside that names the resolved path; the resolution is returned with
// it, so the caller can say where the path leads.
func WithinAny(p string, roots ...string) (Resolution, error) {
	if len(roots) == 0 {
		return Resolution{}, errors.New("pathguard: no root given")
	}
	res, err := Resolve(p)
	if err != nil {
		return Resolution{}, err
	}
	for _, root := range roots {
		r, err := resolveRoot(root)
		if err != nil {
			return Resolution{}, err
		}
		if Inside(r, res.Path) {
			return res, nil
		}
	}
	return res, fmt.Errorf("%w: %s resolves to %s", ErrOutside, p, res.Path)
}

// Within resolves path and returns the result when it is root or below
// root (both compared resolved, so a root reached through a symlink is
// fine). A relative path is taken from root as the kernel would take it
// (not cleaned first: "link/.." climbs from where the link leads). A
// component below a file is an error (the kernel's ENOTDIR).
//
// A path that lands outside root returns an error wrapping ErrOutside that
// reads "pathguard: PATH resolves outside ROOT (it leads to TARGET)"; a
// symlink loop or a root that does not exist return their own error. The
// resolved path is "" whenever err is not nil.
func Within(root, path string) (resolved string, err error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("pathguard: root %s: %w", root, err)
	}
	realRoot, err := resolveRoot(absRoot)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(path) {
		path = absRoot + string(filepath.Separator) + path
	}
	res, err := Resolve(path)
	if err != nil {
		return "", fmt.Errorf("pathguard: %s: %w", path, err)
	}
	if !res.Exists && belowFile(res.Path) {
		return "", fmt.Errorf("pathguard: %s: %s is not a directory", path, belowFileParent(res.Path))
	}
	if !Inside(realRoot, res.Path) {
		return "", &outsideError{path: path, root: root, target: res.Path}
	}
	return res.Path, nil
}

// outsideError is Within's refusal; it is ErrOutside for errors.Is.
type outsideError struct{ path, root, target string }

func (e *outsideError) Error() string {
	return fmt.Sprintf("pathguard: %s resolves outside %s (it leads to %s)", e.path, e.root, e.target)
}

func (e *outsideError) Is(target error) bool { return target == ErrOutside }

// resolveRoot resolves root, which must exist.
func resolveRoot(root string) (string, error) {
	r, err := Resolve(root)
	if err != nil {
		return "", err
	}
	if !r.Exists {
		return "", fmt.Errorf("pathguard: root %s: %w", root, os.ErrNotExist)
	}
	return r.Path, nil
}

// belowFile reports whether some proper ancestor of the (missing) path p
// exists and is not a directory.
func belowFile(p string) bool { return belowFileParent(p) != "" }

// belowFileParent is the deepest existing ancestor of p that is a file
// rather than a directory, or "".
func belowFileParent(p string) string {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err == nil {
			if fi.IsDir() {
				return ""
			}
			return d
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}
