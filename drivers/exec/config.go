package exec

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/drover-project/drover/drivers"
)

// Namespace modes of pid_mode and ipc_mode.
const (
	modePrivate = "private"
	modeHost    = "host"
)

// defaultChrootEnv is the host paths bind-mounted read-only into every task's
// root when the plugin config sets no chroot_env: host path → path in the
// task's root. Paths missing on the host are skipped.
var defaultChrootEnv = map[string]string{
	"/bin":            "/bin",
	"/etc":            "/etc",
	"/lib":            "/lib",
	"/lib32":          "/lib32",
	"/lib64":          "/lib64",
	"/run/resolvconf": "/run/resolvconf",
	"/sbin":           "/sbin",
	"/usr":            "/usr",
}

// defaultUser runs a task that names no user.
const defaultUser = "nobody"

// pluginConfig is the plugin "exec" { config {...} } block.
type pluginConfig struct {
	ChrootEnv      map[string]string
	DefaultPIDMode string
	DefaultIPCMode string
}

var pluginFields = []string{"chroot_env", "default_pid_mode", "default_ipc_mode", "no_cgroups"}

func defaultPluginConfig() pluginConfig {
	return pluginConfig{ChrootEnv: defaultChrootEnv, DefaultPIDMode: modePrivate, DefaultIPCMode: modePrivate}
}

func parsePluginConfig(m map[string]any) (pluginConfig, error) {
	pc := defaultPluginConfig()
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(drivers.CheckFields(m, pluginFields...))
	if raw, ok := m["chroot_env"]; ok && raw != nil {
		env, err := stringMap(raw)
		if err != nil {
			add(&drivers.FieldError{Field: "chroot_env", Rule: "must be a map of host path to task path"})
		} else {
			for src, dst := range env {
				if !filepath.IsAbs(src) || !filepath.IsAbs(dst) || path.Clean(dst) == "/" {
					add(&drivers.FieldError{Field: "chroot_env", Rule: fmt.Sprintf("paths must be absolute and not the root, got %q = %q", src, dst)})
				}
			}
			pc.ChrootEnv = env
		}
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"default_pid_mode", &pc.DefaultPIDMode}, {"default_ipc_mode", &pc.DefaultIPCMode}} {
		v, ok, err := drivers.ConfigString(m, f.key)
		add(err)
		if ok && err == nil {
			add(checkMode(f.key, v))
			*f.dst = v
		}
	}
	if _, _, err := drivers.ConfigBool(m, "no_cgroups"); err != nil {
		add(err)
	}
	return pc, errors.Join(errs...)
}

func stringMap(raw any) (map[string]string, error) {
	out := map[string]string{}
	switch v := raw.(type) {
	case map[string]string:
		for k, s := range v {
			out[k] = s
		}
	case map[string]any:
		for k, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, errors.New("not a string")
			}
			out[k] = s
		}
	case []map[string]any: // HCL blocks decode as a list of maps
		for _, m := range v {
			sub, err := stringMap(m)
			if err != nil {
				return nil, err
			}
			for k, s := range sub {
				out[k] = s
			}
		}
	case []any:
		for _, x := range v {
			sub, err := stringMap(x)
			if err != nil {
				return nil, err
			}
			for k, s := range sub {
				out[k] = s
			}
		}
	default:
		return nil, errors.New("not a map")
	}
	return out, nil
}

func checkMode(field, v string) error {
	if v != modePrivate && v != modeHost {
		return &drivers.FieldError{Field: field, Rule: fmt.Sprintf(`must be "private" or "host", got %q`, v)}
	}
	return nil
}

// taskConfig is a parsed exec config block.
type taskConfig struct {
	Command string
	Args    []string
	PIDMode string
	IPCMode string
}

var taskFields = []string{"command", "args", "pid_mode", "ipc_mode"}

// parseTaskConfig validates a task's config block, listing every problem.
func parseTaskConfig(m map[string]any) (*taskConfig, error) {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(drivers.CheckFields(m, taskFields...))
	var tc taskConfig
	cmd, ok, err := drivers.ConfigString(m, "command")
	add(err)
	if err == nil && (!ok || strings.TrimSpace(cmd) == "") {
		add(&drivers.FieldError{Field: "command", Rule: "is required"})
	}
	tc.Command = cmd
	tc.Args, _, err = drivers.ConfigStringSlice(m, "args")
	add(err)
	for _, f := range []struct {
		key string
		dst *string
	}{{"pid_mode", &tc.PIDMode}, {"ipc_mode", &tc.IPCMode}} {
		v, ok, err := drivers.ConfigString(m, f.key)
		add(err)
		if ok && err == nil && v != "" {
			add(checkMode(f.key, v))
			*f.dst = v
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &tc, nil
}

// bind is one host path mounted into a task's root.
type bind struct {
	Src      string // host path
	Dst      string // path in the task's root ("/usr")
	ReadOnly bool
}

// rootView maps paths as the task sees them to host paths.
type rootView struct {
	taskDir  string
	allocDir string
	binds    []bind // longest Dst first
}

// newRootView lists the chroot_env binds that exist on the host, plus the
// shared alloc dir at /alloc.
func newRootView(cfg *drivers.TaskConfig, chrootEnv map[string]string) *rootView {
	v := &rootView{taskDir: cfg.TaskDir, allocDir: cfg.AllocDir}
	for src, dst := range chrootEnv {
		if _, err := os.Stat(src); err != nil {
			continue
		}
		v.binds = append(v.binds, bind{Src: filepath.Clean(src), Dst: path.Clean(dst), ReadOnly: true})
	}
	if cfg.AllocDir != "" {
		v.binds = append(v.binds, bind{Src: cfg.AllocDir, Dst: "/alloc"})
	}
	sortBinds(v.binds)
	return v
}

// hostPath returns the host path behind p, a path as the task sees it.
func (v *rootView) hostPath(p string) string {
	p = path.Clean("/" + p)
	for _, b := range v.binds {
		if p == b.Dst || strings.HasPrefix(p, b.Dst+"/") {
			return filepath.Join(b.Src, strings.TrimPrefix(p, b.Dst))
		}
	}
	return filepath.Join(v.taskDir, p)
}

// readOnlyHostPath returns the host path behind p when p, a path as the
// task sees it, lies in a read-only bind (a chroot_env directory): a file
// there is the host's, which the task cannot replace.
func (v *rootView) readOnlyHostPath(p string) (string, bool) {
	p = path.Clean("/" + p)
	for _, b := range v.binds {
		if p == b.Dst || strings.HasPrefix(p, b.Dst+"/") {
			return filepath.Join(b.Src, strings.TrimPrefix(p, b.Dst)), b.ReadOnly
		}
	}
	return "", false
}

// searchDirs are where a bare command name is looked for, in the task's root.
var searchDirs = []string{"/local", "/", "/usr/local/bin", "/usr/bin", "/bin"}

// resolveCommand returns the command's path as the task sees it: an
// absolute path as given, a relative path with a slash from the task dir,
// a bare name from searchDirs. It must be an executable file.
func (v *rootView) resolveCommand(command string) (string, error) {
	var candidates []string
	switch {
	case strings.HasPrefix(command, "/"):
		candidates = []string{path.Clean(command)}
	case strings.Contains(command, "/"):
		candidates = []string{path.Join("/", command)}
	default:
		for _, d := range searchDirs {
			candidates = append(candidates, path.Join(d, command))
		}
	}
	var firstErr error
	for _, c := range candidates {
		host, err := v.resolveInRoot(c)
		if err == nil {
			err = checkExecutable(host)
		}
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if len(candidates) == 1 {
		return "", fmt.Errorf("command %q in the task's root: %w", command, firstErr)
	}
	return "", fmt.Errorf("command %q not found in the task's root (searched %s)", command, strings.Join(searchDirs, ", "))
}

// maxLinks bounds the symlinks resolveInRoot follows (ELOOP in the kernel).
const maxLinks = 40

// resolveInRoot follows the symlinks of p, a path as the task sees it, the
// way the kernel will inside the task's root: an absolute link target
// starts again from the task's "/", ".." stops there, and a chroot_env
// bind point is the host directory mounted on it. It returns the host path
// behind the result, which is inside the task dir or a bind's source by
// construction: a symlink a task planted never makes the driver look at a
// host path the task could not reach itself.
func (v *rootView) resolveInRoot(p string) (string, error) {
	todo := strings.Split(p, "/")
	cur := "/"
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		host := v.hostPath(next)
		stat := os.Lstat
		if v.isBindPoint(next) {
			stat = os.Stat // the mount follows the host's own symlink
		}
		fi, err := stat(host)
		if errors.Is(err, os.ErrNotExist) && v.isBindAncestor(next) {
			cur = next // a mountpoint's parent, created at start
			continue
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("too many levels of symbolic links at %s", next)
		}
		target, err := os.Readlink(host)
		if err != nil {
			return "", err
		}
		if path.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return v.hostPath(cur), nil
}

// isBindAncestor reports whether p, a clean path as the task sees it, is a
// directory above a bind's mountpoint.
func (v *rootView) isBindAncestor(p string) bool {
	for _, b := range v.binds {
		if strings.HasPrefix(b.Dst, p+"/") {
			return true
		}
	}
	return false
}

// isBindPoint reports whether p, a clean path as the task sees it, is where
// a bind is mounted.
func (v *rootView) isBindPoint(p string) bool {
	for _, b := range v.binds {
		if b.Dst == p {
			return true
		}
	}
	return false
}

func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return errors.New("is not executable")
	}
	return nil
}

// taskPath rewrites a host path under the task or alloc dir to the path the
// task sees (<task dir>/local/x → /local/x, <alloc dir>/data → /alloc/data);
// other values are returned unchanged.
func (v *rootView) taskPath(s string) string {
	under := func(dir string) (string, bool) {
		if dir == "" {
			return "", false
		}
		if s == dir {
			return "", true
		}
		if strings.HasPrefix(s, dir+"/") {
			return s[len(dir):], true
		}
		return "", false
	}
	if rest, ok := under(v.allocDir); ok {
		return "/alloc" + rest
	}
	if rest, ok := under(v.taskDir); ok {
		if rest == "" {
			return "/"
		}
		return rest
	}
	return s
}

// taskEnv rewrites the directory variables (and any value that is a path
// under the task or alloc dir) to the paths the task sees.
func (v *rootView) taskEnv(env map[string]string) map[string]string {
	out := make(map[string]string, len(env))
	for k, val := range env {
		if rest, ok := strings.CutPrefix(val, "unix://"); ok && filepath.IsAbs(rest) {
			out[k] = "unix://" + v.taskPath(rest) // NOMAD_UNIX_ADDR, the task API's socket
			continue
		}
		out[k] = v.taskPath(val)
	}
	if _, ok := out["PATH"]; !ok {
		out["PATH"] = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
	}
	return out
}
