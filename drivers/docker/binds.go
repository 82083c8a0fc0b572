package docker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/docker/docker/api/types/mount"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/helper/pathguard"
)

// userBind is a bind mount a task's config asks for: a volumes entry with
// a host path, or a mount block of type bind.
type userBind struct {
	Field, Value string // the config field and its value as written, for errors
	HostPath     string // absolute; a relative path is taken from the task dir, unclean
	Target       string
	ReadOnly     bool
	FromVolumes  bool // a volumes entry (these get the SELinux label)
}

// userBinds lists the task's bind mounts in config order.
func userBinds(cfg *drivers.TaskConfig, tc *taskConfig) []userBind {
	hostPath := func(p string) string {
		if filepath.IsAbs(p) || cfg.TaskDir == "" {
			return p
		}
		// Not filepath.Join: its lexical cleaning would take "link/.."
		// as the directory holding link, where the kernel goes to the
		// parent of link's target; pathguard resolves it as the kernel does.
		return cfg.TaskDir + string(filepath.Separator) + p
	}
	var out []userBind
	for i, v := range tc.Volumes {
		if v.named() {
			continue
		}
		out = append(out, userBind{Field: fmt.Sprintf("volumes[%d]", i), Value: v.Raw,
			HostPath: hostPath(v.Source), Target: v.Target, ReadOnly: v.ReadOnly, FromVolumes: true})
	}
	for _, m := range tc.Mounts {
		if m.Type == "bind" {
			out = append(out, userBind{Field: m.Field + ".source", Value: m.Source,
				HostPath: hostPath(m.Source), Target: m.Target, ReadOnly: m.ReadOnly})
		}
	}
	return out
}

// allocRoots are the directories bind sources must stay in with volumes
// disabled: the allocation directory holding the shared alloc dir and the
// task dir (the alloc dir and the task dir themselves when their parents
// differ).
func allocRoots(cfg *drivers.TaskConfig) []string {
	if cfg.AllocDir != "" && cfg.TaskDir != "" && filepath.Dir(cfg.AllocDir) == filepath.Dir(cfg.TaskDir) {
		return []string{filepath.Dir(cfg.AllocDir)}
	}
	var roots []string
	for _, d := range []string{cfg.AllocDir, cfg.TaskDir} {
		if d != "" {
			roots = append(roots, d)
		}
	}
	return roots
}

// guardBind returns the source Docker is given for b. With volumes
// enabled that is b's path, cleaned, and exists is whether it exists
// (following links). With volumes disabled the path is
// resolved (every symlink followed, see pathguard) and must be inside the
// allocation directory; the resolved path is returned, so that Docker
// follows no link of the task's making, and exists reports whether it
// exists. A path outside gives an unrecoverable *PolicyError.
func guardBind(cfg *drivers.TaskConfig, b userBind, so securityOptions) (source string, exists bool, err error) {
	if so.VolumesEnabled {
		// Docker follows the links; exists is its view.
		_, err := os.Stat(b.HostPath)
		return filepath.Clean(b.HostPath), err == nil, nil
	}
	policy := func(reason string) error {
		return drivers.NewRecoverableError(&PolicyError{Field: b.Field, Value: fmt.Sprintf("%q", b.Value),
			Reason: reason + ", and volumes are disabled on this client", Option: volumesOption}, false)
	}
	roots := allocRoots(cfg)
	if len(roots) == 0 {
		return "", false, policy(fmt.Sprintf("%s has no allocation directory to stay in", b.HostPath))
	}
	res, err := pathguard.WithinAny(b.HostPath, roots...)
	switch {
	case errors.Is(err, pathguard.ErrOutside):
		if res.Path == filepath.Clean(b.HostPath) {
			return "", false, policy(fmt.Sprintf("%s is outside the allocation directory", res.Path))
		}
		// As joined, not cleaned: cleaning would undo a "link/.." that the
		// resolution followed.
		return "", false, policy(fmt.Sprintf("%s resolves to %s, outside the allocation directory", b.HostPath, res.Path))
	case err != nil:
		return "", false, drivers.NewRecoverableError(fmt.Errorf("%s = %q: %w", b.Field, b.Value, err), false)
	}
	return res.Path, res.Exists, nil
}

// checkBinds runs guardBind over every bind of the task (a source that
// does not exist yet is not an error here): PrepareTask's check, before
// anything is pulled.
func checkBinds(cfg *drivers.TaskConfig, tc *taskConfig, so securityOptions) error {
	var errs []error
	for _, b := range userBinds(cfg, tc) {
		if _, _, err := guardBind(cfg, b, so); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// taskMounts returns the task's mounts: the alloc dir at /alloc, the task's
// local/ and secrets/ at /local and /secrets, then volumes and mount blocks
// (sources through guardBind), then the host volume mounts (see
// hostVolumeMounts). A bind source that does not exist is a
// recoverable error (a sibling task may be about to
// create it). With volumes { selinuxlabel } set, the driver's binds and
// the volumes entries are returned as Binds with the label instead
// (Docker relabels only those).
func taskMounts(cfg *drivers.TaskConfig, tc *taskConfig, so securityOptions) ([]mount.Mount, []string, error) {
	var mounts []mount.Mount
	var binds []string
	addBind := func(src, dst string, ro, labelled bool, propagation string) {
		if labelled && so.SELinuxLabel != "" {
			opts := "rw"
			if ro {
				opts = "ro"
			}
			if propagation != "" {
				opts += "," + propagation
			}
			binds = append(binds, src+":"+dst+":"+opts+","+so.SELinuxLabel)
			return
		}
		m := mount.Mount{Type: mount.TypeBind, Source: src, Target: dst, ReadOnly: ro}
		if propagation != "" {
			m.BindOptions = &mount.BindOptions{Propagation: mount.Propagation(propagation)}
		}
		mounts = append(mounts, m)
	}
	// The user's binds are checked before the driver creates anything.
	type checked struct {
		b      userBind
		source string
	}
	var user []checked
	var errs []error
	for _, b := range userBinds(cfg, tc) {
		src, exists, err := guardBind(cfg, b, so)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !exists:
			errs = append(errs, drivers.NewRecoverableError(fmt.Errorf("%s = %q: bind source %s does not exist", b.Field, b.Value, src), true))
		default:
			user = append(user, checked{b, src})
		}
	}
	if err := errors.Join(errs...); err != nil {
		// errors.Join hides a RecoverableError from errors.As only when
		// there are several; keep the verdict: recoverable only if all are.
		return nil, nil, drivers.NewRecoverableError(err, allRecoverable(errs))
	}

	builtin := func(src, dst string) error {
		if err := os.MkdirAll(src, 0o777); err != nil {
			return fmt.Errorf("creating %s: %w", src, err)
		}
		addBind(src, dst, false, true, "")
		return nil
	}
	if cfg.AllocDir != "" {
		if err := builtin(cfg.AllocDir, containerAllocDir); err != nil {
			return nil, nil, err
		}
	}
	if cfg.TaskDir != "" {
		if err := builtin(filepath.Join(cfg.TaskDir, "local"), containerLocalDir); err != nil {
			return nil, nil, err
		}
		if err := builtin(filepath.Join(cfg.TaskDir, "secrets"), containerSecretsDir); err != nil {
			return nil, nil, err
		}
	}
	// user is in config order: the volumes entries with a host path, then
	// the bind mount blocks.
	next := 0
	for _, v := range tc.Volumes {
		if v.named() {
			mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: v.Source, Target: v.Target, ReadOnly: v.ReadOnly})
			continue
		}
		c := user[next]
		next++
		addBind(c.source, c.b.Target, c.b.ReadOnly, true, v.Propagation)
	}
	for _, m := range tc.Mounts {
		if m.Type != "bind" {
			mounts = append(mounts, withOptions(mount.Mount{Type: mount.Type(m.Type), Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly}, m.Options))
			continue
		}
		c := user[next]
		next++
		mounts = append(mounts, withOptions(mount.Mount{Type: mount.TypeBind, Source: c.source, Target: c.b.Target, ReadOnly: c.b.ReadOnly}, m.Options))
	}
	vols, err := hostVolumeMounts(cfg)
	if err != nil {
		return nil, nil, err
	}
	return append(mounts, vols...), binds, nil
}

// withOptions sets a mount block's per-type options on m.
func withOptions(m mount.Mount, o mountOptions) mount.Mount {
	switch m.Type {
	case mount.TypeTmpfs:
		if o.TmpfsSize != 0 || o.TmpfsMode != 0 {
			m.TmpfsOptions = &mount.TmpfsOptions{SizeBytes: o.TmpfsSize, Mode: o.TmpfsMode}
		}
	case mount.TypeBind:
		if o.Propagation != "" {
			m.BindOptions = &mount.BindOptions{Propagation: mount.Propagation(o.Propagation)}
		}
	case mount.TypeVolume:
		if o.NoCopy || len(o.VolumeLabels) > 0 {
			m.VolumeOptions = &mount.VolumeOptions{NoCopy: o.NoCopy, Labels: o.VolumeLabels}
		}
	}
	return m
}

func allRecoverable(errs []error) bool {
	for _, err := range errs {
		if !drivers.IsRecoverable(err) {
			return false
		}
	}
	return true
}
