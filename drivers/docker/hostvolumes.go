package docker

import (
	"fmt"
	"os"
	"path"

	"github.com/docker/docker/api/types/mount"

	"github.com/drover-project/drover/drivers"
)

// hostVolumePropagation maps a volume_mount's propagation_mode to Docker's
// bind propagation, as in Nomad.
var hostVolumePropagation = map[string]mount.Propagation{
	"":              mount.PropagationRPrivate,
	"private":       mount.PropagationRPrivate,
	"host-to-task":  mount.PropagationRSlave,
	"bidirectional": mount.PropagationRShared,
}

// hostVolumeMounts returns the bind mounts of the task's host volumes
// (volume_mount blocks resolved by the client). They are the operator's
// host_volume paths, so they need no volumes { enabled = true }; a
// destination that is not absolute is taken from the container's root. A
// host path that does not exist (removed since the client started) is a
// recoverable error.
func hostVolumeMounts(cfg *drivers.TaskConfig) ([]mount.Mount, error) {
	var out []mount.Mount
	for _, m := range cfg.Mounts {
		prop, ok := hostVolumePropagation[m.PropagationMode]
		if !ok {
			return nil, drivers.NewRecoverableError(fmt.Errorf("volume_mount destination %q: unknown propagation_mode %q", m.TaskPath, m.PropagationMode), false)
		}
		if _, err := os.Stat(m.HostPath); err != nil {
			return nil, drivers.NewRecoverableError(fmt.Errorf("volume_mount destination %q: host volume path: %w", m.TaskPath, err), true)
		}
		out = append(out, mount.Mount{
			Type: mount.TypeBind, Source: m.HostPath, Target: path.Clean("/" + m.TaskPath), ReadOnly: m.ReadOnly,
			BindOptions: &mount.BindOptions{Propagation: prop},
		})
	}
	return out, nil
}
