package allocdir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/drover-project/drover/helper/pathguard"
)

// TestBuildRefusesSymlinksOut: a task that replaced one of the allocation's
// directories with a symlink to a host directory (alloc/data through its
// /alloc, or its own local/) makes Build fail naming it; the host
// directory is neither created into nor chmodded.
func TestBuildRefusesSymlinksOut(t *testing.T) {
	for _, planted := range []string{"alloc/data", "alloc/tmp", "web/local", "web/tmp"} {
		t.Run(planted, func(t *testing.T) {
			root := t.TempDir()
			d, err := New(root, "a1")
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Build([]string{"web"}); err != nil {
				t.Fatal(err)
			}
			host := t.TempDir()
			if err := os.Chmod(host, 0o700); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(d.Dir(), planted)
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(host, p); err != nil {
				t.Fatal(err)
			}
			err = d.Build([]string{"web"})
			if !errors.Is(err, pathguard.ErrOutside) {
				t.Fatalf("Build = %v, want ErrOutside", err)
			}
			fi, err := os.Stat(host)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o700 || fi.Mode()&os.ModeSticky != 0 {
				t.Fatalf("host dir mode changed to %v", fi.Mode())
			}
		})
	}
}
