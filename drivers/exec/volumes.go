package exec

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/drover-project/drover/drivers"
)

// addVolumes adds the task's host volume mounts to the view's binds: each
// host path is bind-mounted at its destination in the task's root (read-only
// when the mount is). A destination that is the root, or lies in or above
// another bind (a chroot_env directory, /alloc, another volume), is
// refused: one of the two would hide the other. Only private propagation is
// possible, the task's mounts being private to its namespace. A host path
// that does not exist is an error (the client checked it at start; it may
// have been removed since).
func (v *rootView) addVolumes(mounts []*drivers.MountConfig) error {
	for _, m := range mounts {
		dst := path.Clean("/" + m.TaskPath)
		if dst == "/" {
			return fmt.Errorf("volume_mount destination %q: a volume cannot replace the task's root", m.TaskPath)
		}
		switch m.PropagationMode {
		case "", "private":
		default:
			return fmt.Errorf("volume_mount destination %q: propagation_mode %q is not supported by the exec driver (its mounts are private to the task)", m.TaskPath, m.PropagationMode)
		}
		for _, b := range v.binds {
			if nested(dst, b.Dst) || nested(b.Dst, dst) {
				return fmt.Errorf("volume_mount destination %q overlaps %s, which the exec driver mounts from %s", m.TaskPath, b.Dst, b.Src)
			}
		}
		if _, err := os.Stat(m.HostPath); err != nil {
			return fmt.Errorf("volume_mount destination %q: host volume path: %w", m.TaskPath, err)
		}
		v.binds = append(v.binds, bind{Src: filepath.Clean(m.HostPath), Dst: dst, ReadOnly: m.ReadOnly})
	}
	sortBinds(v.binds)
	return nil
}

// nested reports whether p is dir or lies below it.
func nested(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// sortBinds orders binds longest Dst first (the lookup order of rootView).
func sortBinds(binds []bind) {
	sort.Slice(binds, func(i, j int) bool {
		if len(binds[i].Dst) != len(binds[j].Dst) {
			return len(binds[i].Dst) > len(binds[j].Dst)
		}
		return binds[i].Dst < binds[j].Dst
	})
}
