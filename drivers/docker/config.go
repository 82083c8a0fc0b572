package docker

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/distribution/reference"

	"github.com/drover-project/drover/drivers"
)

// Defaults of the duration options.
const (
	DefaultImagePullTimeout    = 5 * time.Minute
	DefaultPullActivityTimeout = 2 * time.Minute
	DefaultImageDelay          = 3 * time.Minute
)

// taskConfig is a parsed docker config block.
type taskConfig struct {
	Image               string
	Command             string
	Args                []string
	Entrypoint          []string
	WorkDir             string
	Ports               []string
	Labels              map[string]string
	Volumes             []volumeSpec
	Mounts              []mountSpec
	NetworkMode         string
	ForcePull           bool
	Auth                *authConfig
	ImagePullTimeout    time.Duration
	PullActivityTimeout time.Duration
	Security            securityConfig
	Keys                containerKeys
}

// volumeSpec is one "host:container[:ro|rw]" entry of volumes.
type volumeSpec struct {
	Raw            string // the entry as written
	Source, Target string
	ReadOnly       bool
	Propagation    string // a bind's mount propagation ("rslave", ...); "" is Docker's default
}

// named reports whether the entry names a Docker volume ("data:/data")
// rather than a host path (anything with a "/" or a ".").
func (v volumeSpec) named() bool { return !strings.ContainsAny(v.Source, "/.") }

// mountSpec is one mount block.
type mountSpec struct {
	Field    string // "mount[0]" or "mounts[0]" (the legacy list), for errors
	Type     string // bind, volume or tmpfs
	Source   string
	Target   string
	ReadOnly bool
	Options  mountOptions
}

// authConfig is the auth block of a task.
type authConfig struct {
	Username      string
	Password      string
	Email         string
	ServerAddress string
	IdentityToken string
}

var taskFields = slices.Concat([]string{
	"image", "command", "args", "entrypoint", "work_dir", "ports", "labels", "volumes", "mount", "mounts",
	"network_mode", "force_pull", "auth", "image_pull_timeout", "pull_activity_timeout", "prefetch",
	"prefetch_parallel",
	// Read by the server (digest pinning and the image watcher, see
	// nomad/imageresolve); accepted and ignored here.
	"pin_digest", "auto_update", "auto_update_interval", "auto_update_soak",
	"auto_update_window", "auto_update_approval", "auto_update_min_age",
}, securityTaskFields, containerKeyFields)

var (
	mountFields = []string{"type", "source", "target", "readonly", "volume_options", "bind_options", "tmpfs_options"}
	authFields  = []string{"username", "password", "email", "server_address", "identity_token"}
)

// parseTaskConfig validates and parses a task's config block, listing every
// problem. Defaults for the durations come from the plugin config.
func parseTaskConfig(m map[string]any, pc pluginConfig) (*taskConfig, error) {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(checkUnsupported(m, unsupportedKeys, ""))
	add(drivers.CheckFields(withoutKeys(m, unsupportedKeys), taskFields...))
	tc := taskConfig{ImagePullTimeout: pc.ImagePullTimeout, PullActivityTimeout: pc.PullActivityTimeout}

	image, ok, err := drivers.ConfigString(m, "image")
	add(err)
	if err == nil {
		image = strings.TrimSpace(image)
		switch {
		case !ok || image == "":
			add(&drivers.FieldError{Field: "image", Rule: "is required"})
		default:
			if _, perr := reference.ParseNormalizedNamed(image); perr != nil {
				add(&drivers.FieldError{Field: "image", Rule: fmt.Sprintf("is not a valid image reference %q: %v", image, perr)})
			}
		}
	}
	tc.Image = image

	tc.Command, _, err = drivers.ConfigString(m, "command")
	add(err)
	tc.Args, _, err = drivers.ConfigStringSlice(m, "args")
	add(err)
	tc.Entrypoint, _, err = drivers.ConfigStringSlice(m, "entrypoint")
	add(err)
	tc.WorkDir, _, err = drivers.ConfigString(m, "work_dir")
	add(err)
	if err == nil && tc.WorkDir != "" && !filepath.IsAbs(tc.WorkDir) {
		add(&drivers.FieldError{Field: "work_dir", Rule: "must be an absolute path inside the container"})
	}
	tc.NetworkMode, _, err = drivers.ConfigString(m, "network_mode")
	add(err)
	tc.ForcePull, _, err = drivers.ConfigBool(m, "force_pull")
	add(err)
	_, _, err = drivers.ConfigBool(m, "prefetch") // consumed by the task runner
	add(err)
	// prefetch_parallel is read by the server (nomad/prefetch): how many
	// nodes may pull the image ahead of their wave at once; 0 is off.
	if n, ok, err := drivers.ConfigInt(m, "prefetch_parallel"); err != nil {
		add(err)
	} else if ok && n < 0 {
		add(&drivers.FieldError{Field: "prefetch_parallel", Rule: "must not be negative"})
	}

	tc.Ports, _, err = drivers.ConfigStringSlice(m, "ports")
	add(err)
	for i, p := range tc.Ports {
		if strings.TrimSpace(p) == "" {
			add(&drivers.FieldError{Field: fmt.Sprintf("ports[%d]", i), Rule: "must be a port label of the group's network block"})
		}
	}

	tc.Labels, err = stringMap(m, "labels")
	add(err)
	for _, k := range reservedLabels {
		if _, ok := tc.Labels[k]; ok {
			add(&drivers.FieldError{Field: "labels." + k, Rule: "is set by the driver and must not be given"})
		}
	}

	vols, _, err := drivers.ConfigStringSlice(m, "volumes")
	add(err)
	for i, v := range vols {
		spec, verr := parseVolume(v)
		if verr != nil {
			add(&drivers.FieldError{Field: fmt.Sprintf("volumes[%d]", i), Rule: verr.Error()})
			continue
		}
		tc.Volumes = append(tc.Volumes, spec)
	}

	// mounts is the list form of mount blocks Nomad had before 1.0.1;
	// both go through the same checks (and the same bind confinement).
	for _, key := range []string{"mount", "mounts"} {
		ms, err := parseMounts(m, key)
		add(err)
		tc.Mounts = append(tc.Mounts, ms...)
	}
	tc.Keys, err = parseContainerKeys(m)
	add(err)
	// Docker sets a MAC only on a network of its own: not in the host's
	// namespace, none, or another container's (a group's bridge network).
	if mode := tc.NetworkMode; tc.Keys.MacAddress != "" && (mode == "host" || mode == "none" || strings.HasPrefix(mode, "container:")) {
		add(&drivers.FieldError{Field: "mac_address", Rule: fmt.Sprintf("cannot be set with network_mode = %q", mode)})
	}
	tc.Auth, err = parseAuth(m)
	add(err)
	tc.Security, err = parseSecurityConfig(m)
	add(err)

	dur := func(key string, dst *time.Duration) {
		d, ok, err := drivers.ConfigDuration(m, key)
		add(err)
		if err == nil && ok {
			if d == 0 {
				add(&drivers.FieldError{Field: key, Rule: "must be positive"})
				return
			}
			*dst = d
		}
	}
	dur("image_pull_timeout", &tc.ImagePullTimeout)
	dur("pull_activity_timeout", &tc.PullActivityTimeout)

	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &tc, nil
}

// parseVolume parses "host:container[:ro|rw]".
func parseVolume(v string) (volumeSpec, error) {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return volumeSpec{}, fmt.Errorf("must be \"host_path:container_path[:ro]\", got %q", v)
	}
	spec := volumeSpec{Raw: v, Source: parts[0], Target: parts[1]}
	if spec.Source == "" || spec.Target == "" {
		return volumeSpec{}, fmt.Errorf("must name both a host path and a container path, got %q", v)
	}
	if !filepath.IsAbs(spec.Target) {
		return volumeSpec{}, fmt.Errorf("container path %q must be absolute", spec.Target)
	}
	if len(parts) == 3 {
		// Docker's bind options: a mode and a propagation, comma-separated
		// ("/:/host:ro,rslave", node-exporter's usual mount).
		for _, opt := range strings.Split(parts[2], ",") {
			switch {
			case opt == "ro":
				spec.ReadOnly = true
			case opt == "rw":
			case slices.Contains(bindPropagations, opt) && spec.Propagation == "":
				spec.Propagation = opt
			default:
				return volumeSpec{}, fmt.Errorf("mode must be \"ro\" or \"rw\", with at most one propagation of %v after a comma, got %q",
					bindPropagations, parts[2])
			}
		}
		if spec.Propagation != "" && spec.named() {
			return volumeSpec{}, fmt.Errorf("propagation %q applies to a bind of a host path, not to the named volume %q", spec.Propagation, spec.Source)
		}
	}
	return spec, nil
}

// parseMounts parses the mount blocks (or the mounts list) under key: a
// list of maps, or one map.
func parseMounts(m map[string]any, key string) ([]mountSpec, error) {
	blocks, err := blockList(m, key)
	if err != nil {
		return nil, err
	}
	var errs []error
	var out []mountSpec
	for i, b := range blocks {
		field := fmt.Sprintf("%s[%d]", key, i)
		fe := func(key, rule string) { errs = append(errs, &drivers.FieldError{Field: field + "." + key, Rule: rule}) }
		if err := drivers.CheckFields(b, mountFields...); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
		}
		ms := mountSpec{Field: field}
		var e1, e2, e3, e4 error
		ms.Type, _, e1 = drivers.ConfigString(b, "type")
		ms.Source, _, e2 = drivers.ConfigString(b, "source")
		ms.Target, _, e3 = drivers.ConfigString(b, "target")
		ms.ReadOnly, _, e4 = drivers.ConfigBool(b, "readonly")
		for _, e := range []error{e1, e2, e3, e4} {
			if e != nil {
				errs = append(errs, fmt.Errorf("%s: %w", field, e))
			}
		}
		if ms.Type == "" {
			ms.Type = "volume"
		}
		switch ms.Type {
		case "bind", "volume":
			if ms.Source == "" && e2 == nil {
				fe("source", "is required for a "+ms.Type+" mount")
			}
		case "tmpfs":
			if ms.Source != "" {
				fe("source", "must be empty for a tmpfs mount")
			}
		default:
			fe("type", fmt.Sprintf("must be bind, volume or tmpfs, got %q", ms.Type))
		}
		if e3 == nil && (ms.Target == "" || !filepath.IsAbs(ms.Target)) {
			fe("target", "is required and must be an absolute path inside the container")
		}
		var oerr error
		ms.Options, oerr = parseMountOptions(b, field, ms.Type)
		if oerr != nil {
			errs = append(errs, oerr)
		}
		out = append(out, ms)
	}
	return out, errors.Join(errs...)
}

// parseAuth parses the auth block.
func parseAuth(m map[string]any) (*authConfig, error) {
	blocks, err := blockList(m, "auth")
	if err != nil || len(blocks) == 0 {
		return nil, err
	}
	if len(blocks) > 1 {
		return nil, &drivers.FieldError{Field: "auth", Rule: "must be given at most once"}
	}
	b := blocks[0]
	var a authConfig
	var errs []error
	if err := drivers.CheckFields(b, authFields...); err != nil {
		errs = append(errs, fmt.Errorf("auth: %w", err))
	}
	dsts := []*string{&a.Username, &a.Password, &a.Email, &a.ServerAddress, &a.IdentityToken}
	for i, key := range authFields {
		s, _, err := drivers.ConfigString(b, key)
		if err != nil {
			errs = append(errs, fmt.Errorf("auth: %w", err))
		}
		*dsts[i] = s
	}
	return &a, errors.Join(errs...)
}

// blockList returns config[key] as a list of maps: HCL blocks decode as a
// list of objects, a JSON job may give a single object.
func blockList(m map[string]any, key string) ([]map[string]any, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	switch t := v.(type) {
	case map[string]any:
		return []map[string]any{t}, nil
	case []map[string]any:
		return t, nil
	case []any:
		out := make([]map[string]any, 0, len(t))
		for i, e := range t {
			mm, ok := e.(map[string]any)
			if !ok {
				return nil, &drivers.FieldError{Field: fmt.Sprintf("%s[%d]", key, i), Rule: fmt.Sprintf("must be a block (object), got %T", e)}
			}
			out = append(out, mm)
		}
		return out, nil
	}
	return nil, &drivers.FieldError{Field: key, Rule: fmt.Sprintf("must be a block (object), got %T", v)}
}

// stringMap returns config[key] as a map of strings: a map, or a list of
// maps (HCL block syntax), merged in order.
func stringMap(m map[string]any, key string) (map[string]string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	if ms, ok := v.(map[string]string); ok {
		out := make(map[string]string, len(ms))
		for k, s := range ms {
			out[k] = s
		}
		return out, nil
	}
	blocks, err := blockList(m, key)
	if err != nil {
		return nil, &drivers.FieldError{Field: key, Rule: fmt.Sprintf("must be a map of strings, got %T", v)}
	}
	out := map[string]string{}
	var errs []error
	for _, b := range blocks {
		keys := make([]string, 0, len(b))
		for k := range b {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s, isStr := b[k].(string)
			if !isStr {
				errs = append(errs, &drivers.FieldError{Field: key + "." + k, Rule: fmt.Sprintf("must be a string, got %T", b[k])})
				continue
			}
			out[k] = s
		}
	}
	return out, errors.Join(errs...)
}

// pluginConfig is the parsed plugin "docker" { config {...} } block.
type pluginConfig struct {
	Enabled             bool
	Endpoint            string // Docker host; "" = environment (DOCKER_HOST) or the default socket
	AuthConfigPath      string // docker config.json with auths; "" = $DOCKER_CONFIG or ~/.docker
	ImageGC             bool
	ImageDelay          time.Duration
	ImagePullTimeout    time.Duration
	PullActivityTimeout time.Duration
	Security            securityOptions
}

func defaultPluginConfig() pluginConfig {
	return pluginConfig{
		Security:            defaultSecurityOptions(),
		Enabled:             true,
		ImageGC:             true,
		ImageDelay:          DefaultImageDelay,
		ImagePullTimeout:    DefaultImagePullTimeout,
		PullActivityTimeout: DefaultPullActivityTimeout,
	}
}

var pluginFields = append([]string{"enabled", "endpoint", "auth", "gc", "image_delay", "pull_activity_timeout", "image_pull_timeout"},
	securityPluginFields...)

// parsePluginConfig parses the plugin block over the defaults. image_delay
// may be given at the top level or inside gc (Nomad's place for it).
func parsePluginConfig(m map[string]any) (pluginConfig, error) {
	pc := defaultPluginConfig()
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(drivers.CheckFields(m, pluginFields...))
	if b, ok, err := drivers.ConfigBool(m, "enabled"); err != nil {
		add(err)
	} else if ok {
		pc.Enabled = b
	}
	var err error
	pc.Endpoint, _, err = drivers.ConfigString(m, "endpoint")
	add(err)
	dur := func(cfg map[string]any, key, field string, dst *time.Duration) {
		d, ok, err := drivers.ConfigDuration(cfg, key)
		if err != nil {
			add(&drivers.FieldError{Field: field, Rule: strings.TrimPrefix(err.Error(), key+" ")})
			return
		}
		if ok {
			*dst = d
		}
	}
	dur(m, "image_delay", "image_delay", &pc.ImageDelay)
	dur(m, "image_pull_timeout", "image_pull_timeout", &pc.ImagePullTimeout)
	dur(m, "pull_activity_timeout", "pull_activity_timeout", &pc.PullActivityTimeout)
	if pc.ImagePullTimeout == 0 {
		add(&drivers.FieldError{Field: "image_pull_timeout", Rule: "must be positive"})
	}
	if pc.PullActivityTimeout == 0 {
		add(&drivers.FieldError{Field: "pull_activity_timeout", Rule: "must be positive"})
	}

	gcs, err := blockList(m, "gc")
	add(err)
	for _, gc := range gcs {
		if err := drivers.CheckFields(gc, "image", "image_delay", "container"); err != nil {
			add(fmt.Errorf("gc: %w", err))
		}
		if b, ok, err := drivers.ConfigBool(gc, "image"); err != nil {
			add(fmt.Errorf("gc: %w", err))
		} else if ok {
			pc.ImageGC = b
		}
		// Drover always removes a task's container when the task is
		// destroyed: container = false would be accepted and not done.
		if keep, ok, err := drivers.ConfigBool(gc, "container"); err != nil {
			add(fmt.Errorf("gc: %w", err))
		} else if ok && !keep {
			add(&drivers.FieldError{Field: "gc.container", Rule: "= false is not supported by Drover: a task's container is always removed when the task is destroyed"})
		}
		dur(gc, "image_delay", "gc.image_delay", &pc.ImageDelay)
	}

	auths, err := blockList(m, "auth")
	add(err)
	for _, a := range auths {
		if err := drivers.CheckFields(a, "config"); err != nil {
			add(fmt.Errorf("auth: %w", err))
		}
		s, _, err := drivers.ConfigString(a, "config")
		if err != nil {
			add(fmt.Errorf("auth: %w", err))
		}
		pc.AuthConfigPath = s
	}
	add(parseSecurityOptions(m, &pc.Security))
	return pc, errors.Join(errs...)
}
