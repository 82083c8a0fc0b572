package pathguard

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree builds, under a fresh temp dir, outside/ (a host directory) and
// root/ holding a file, a directory and the symlinks of the table below.
func withinTree(t *testing.T) (base, root string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(base, "root")
	for _, d := range []string{"root/sub/deep", "outside/secret"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"root/in-abs":     filepath.Join(root, "sub"),     // absolute, inside
		"root/in-rel":     "sub/deep",                     // relative, inside
		"root/out-abs":    filepath.Join(base, "outside"), // absolute, outside
		"root/out-rel":    "../outside",                   // relative, outside
		"root/sub/up":     "../..",                        // climbs out from below
		"root/dangle-in":  "sub/not-yet",                  // dangling, inside
		"root/dangle-out": filepath.Join(base, "outside", "not-yet"),
		"root/loop-a":     "loop-b",
		"root/loop-b":     "loop-a",
		"root/chain":      "in-rel/../../out-rel", // through a link, then .. from where it led
		"root/to-root":    ".",
		"link-to-root":    "root", // beside root: the root reached through a symlink
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(base, name)); err != nil {
			t.Fatal(err)
		}
	}
	return base, root
}

func TestWithin(t *testing.T) {
	base, root := withinTree(t)
	outside := filepath.Join(base, "outside")
	cases := []struct {
		name    string
		root    string // default: root
		path    string // relative paths are taken from the root
		want    string // resolved, when allowed
		outside bool   // refused with ErrOutside
		fails   bool   // refused with another error
	}{
		{name: "the root itself", path: root, want: root},
		{name: "a file below", path: "file", want: filepath.Join(root, "file")},
		{name: "a missing tail", path: "sub/new/file", want: filepath.Join(root, "sub/new/file")},
		{name: "a missing tail with dot-dot", path: "sub/new/../other", want: filepath.Join(root, "sub/other")},
		{name: "lexical dot-dot escape", path: "sub/../../outside", outside: true},
		{name: "absolute path outside", path: outside, outside: true},
		{name: "absolute symlink inside", path: "in-abs/deep", want: filepath.Join(root, "sub/deep")},
		{name: "relative symlink inside", path: "in-rel", want: filepath.Join(root, "sub/deep")},
		{name: "absolute symlink outside", path: "out-abs/secret", outside: true},
		{name: "relative symlink outside", path: "out-rel", outside: true},
		{name: "missing tail below an outside symlink", path: "out-abs/new/file", outside: true},
		{name: "symlink climbing out from a subdirectory", path: "sub/up/outside", outside: true},
		{name: "dot-dot applies where a symlink led", path: "in-rel/../x", want: filepath.Join(root, "sub/x")},
		{name: "dangling symlink inside", path: "dangle-in", want: filepath.Join(root, "sub/not-yet")},
		{name: "dangling symlink outside", path: "dangle-out", outside: true},
		{name: "chain of symlinks and dot-dot leading out", path: "chain", outside: true},
		{name: "symlink to the root", path: "to-root/file", want: filepath.Join(root, "file")},
		{name: "root given through a symlink", root: filepath.Join(base, "link-to-root"), path: "sub", want: filepath.Join(root, "sub")},
		{name: "path given through the root's symlink", path: filepath.Join(base, "link-to-root", "file"), want: filepath.Join(root, "file")},
		{name: "symlink loop", path: "loop-a/x", fails: true},
		{name: "component below a file", path: "file/x", fails: true},
		{name: "missing root", root: filepath.Join(base, "nope"), path: "x", fails: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.root
			if r == "" {
				r = root
			}
			got, err := Within(r, c.path)
			switch {
			case c.outside:
				if !errors.Is(err, ErrOutside) {
					t.Fatalf("Within(%q) = %q, %v; want ErrOutside", c.path, got, err)
				}
				if got != "" {
					t.Fatalf("resolved %q returned with an error", got)
				}
			case c.fails:
				if err == nil || errors.Is(err, ErrOutside) {
					t.Fatalf("Within(%q) = %q, %v; want a non-ErrOutside error", c.path, got, err)
				}
			default:
				if err != nil || got != c.want {
					t.Fatalf("Within(%q) = %q, %v; want %q", c.path, got, err, c.want)
				}
			}
		})
	}
}

// TestWithinNamesThePath checks that the refusal names the path and where
// it leads, which the task event shows.
func TestWithinNamesThePath(t *testing.T) {
	base, root := withinTree(t)
	_, err := Within(root, filepath.Join(root, "out-abs", "secret"))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{filepath.Join(root, "out-abs", "secret"), filepath.Join(base, "outside", "secret")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
