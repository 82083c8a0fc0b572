package pathguard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutside is wrapped by Within's error for a path that resolves outside
// its root.
var ErrOutside = errors.New("resolves outside")

// maxLinks bounds the symlinks followed in one resolution, as the kernel's
// limit on nested links does (ELOOP).
const maxLinks = 255

// Within resolves path with every symlink in it followed and returns the
// result when it is root or below root (both compared resolved, so a root
// reached through a symlink is fine). A relative path is taken from root.
// A missing tail is resolved from its deepest existing parent: the missing
// components are taken as written ("." and ".." applied to the resolved
// parent), since nothing there can be a symlink yet.
//
// A path that lands outside root returns an error wrapping ErrOutside that
// names path and where it leads; a symlink loop, a component below a file,
// or a root that does not exist return the underlying error. The resolved
// path is "" whenever err is not nil.
func Within(root, path string) (resolved string, err error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("pathguard: root %s: %w", root, err)
	}
	realRoot, err = filepath.Abs(realRoot)
	if err != nil {
		return "", fmt.Errorf("pathguard: root %s: %w", root, err)
	}
	if !filepath.IsAbs(path) {
		// Not filepath.Join: cleaning "link/.." lexically would skip the
		// link, and the kernel follows it.
		path = root + string(filepath.Separator) + path
	}
	resolved, err = resolve(path)
	if err != nil {
		return "", fmt.Errorf("pathguard: %s: %w", path, err)
	}
	if !isBelow(realRoot, resolved) {
		return "", fmt.Errorf("pathguard: %s %w %s (it leads to %s)", path, ErrOutside, root, resolved)
	}
	return resolved, nil
}

// isBelow reports whether p is root or a path below it; both are clean and
// absolute.
func isBelow(root, p string) bool {
	if root == string(filepath.Separator) {
		return true
	}
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// resolve follows the symlinks of the absolute path p component by
// component, as the kernel's lookup does (a ".." after a symlink climbs
// from where the link led, not lexically), and returns the physical path.
// Once a component is missing, the rest is applied lexically.
func resolve(p string) (string, error) {
	sep := string(filepath.Separator)
	todo := splitPath(p)
	done := sep // resolved so far: physical, no symlinks
	links := 0
	missing := false
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, c)
		if missing {
			done = next
			continue
		}
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, os.ErrNotExist):
			missing = true
			done = next
			continue
		case err != nil:
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			if !fi.IsDir() && len(nonEmpty(todo)) > 0 {
				return "", fmt.Errorf("%s is not a directory", next)
			}
			done = next
			continue
		}
		links++
		if links > maxLinks {
			return "", fmt.Errorf("too many levels of symbolic links at %s", next)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			done = sep
		}
		todo = append(splitPath(target), todo...)
	}
	return done, nil
}

func splitPath(p string) []string {
	return strings.Split(p, string(filepath.Separator))
}

// nonEmpty drops the components that name nothing ("" and ".").
func nonEmpty(cs []string) []string {
	var out []string
	for _, c := range cs {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}
