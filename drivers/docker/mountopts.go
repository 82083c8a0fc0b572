package docker

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/drover-project/drover/drivers"
)

// mountOptions are the per-type options of a mount block (or a mounts
// entry), passed to Docker's mount as written.
type mountOptions struct {
	TmpfsSize    int64       // tmpfs_options.size, bytes; 0 = Docker's default
	TmpfsMode    os.FileMode // tmpfs_options.mode; 0 = Docker's default
	Propagation  string      // bind_options.propagation
	NoCopy       bool        // volume_options.no_copy
	VolumeLabels map[string]string
}

var bindPropagations = []string{"private", "rprivate", "shared", "rshared", "slave", "rslave"}

// parseMountOptions reads the options block of mount type typ from b;
// field names the mount ("mounts[0]"). An options block of another type
// is an error, as is volume_options.driver_config (volume drivers are
// not supported).
func parseMountOptions(b map[string]any, field, typ string) (mountOptions, error) {
	var o mountOptions
	var errs []error
	fe := func(key, rule string) { errs = append(errs, &drivers.FieldError{Field: field + "." + key, Rule: rule}) }
	wrap := func(err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
		}
	}
	one := func(key, forType string, allowed ...string) map[string]any {
		blocks, err := blockList(b, key)
		wrap(err)
		if len(blocks) == 0 {
			return nil
		}
		if typ != forType {
			fe(key, fmt.Sprintf("applies to %s mounts, and this one is of type %q", forType, typ))
			return nil
		}
		if len(blocks) > 1 {
			fe(key, "must be given at most once")
			return nil
		}
		if err := drivers.CheckFields(blocks[0], allowed...); err != nil {
			errs = append(errs, fmt.Errorf("%s.%s: %w", field, key, err))
		}
		return blocks[0]
	}
	if t := one("tmpfs_options", "tmpfs", "size", "mode"); t != nil {
		if n, ok, err := drivers.ConfigInt(t, "size"); err != nil {
			wrap(fmt.Errorf("tmpfs_options: %w", err))
		} else if ok && n < 0 {
			fe("tmpfs_options.size", "must not be negative")
		} else {
			o.TmpfsSize = int64(n)
		}
		if n, ok, err := drivers.ConfigInt(t, "mode"); err != nil {
			wrap(fmt.Errorf("tmpfs_options: %w", err))
		} else if ok && (n < 0 || n > 0o7777) {
			fe("tmpfs_options.mode", fmt.Sprintf("must be a file mode such as 0o1777 (1023), got %d", n))
		} else {
			o.TmpfsMode = os.FileMode(n)
		}
	}
	if bo := one("bind_options", "bind", "propagation"); bo != nil {
		p, _, err := drivers.ConfigString(bo, "propagation")
		wrap(err)
		if p != "" && !slices.Contains(bindPropagations, p) {
			fe("bind_options.propagation", fmt.Sprintf("must be one of %v, got %q", bindPropagations, p))
		}
		o.Propagation = p
	}
	if vo := one("volume_options", "volume", "no_copy", "labels", "driver_config"); vo != nil {
		if _, ok := vo["driver_config"]; ok {
			errs = append(errs, &UnsupportedError{Field: field + ".volume_options.driver_config", Reason: unsupportedKeys["volume_driver"]})
		}
		nc, _, err := drivers.ConfigBool(vo, "no_copy")
		wrap(err)
		o.NoCopy = nc
		o.VolumeLabels, err = stringMap(vo, "labels")
		if err != nil {
			wrap(fmt.Errorf("volume_options: %w", err))
		}
	}
	return o, errors.Join(errs...)
}
