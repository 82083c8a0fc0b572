package rawexec

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/drover-project/drover/drivers"
)

// taskConfig is a parsed raw_exec config block.
type taskConfig struct {
	Command string
	Args    []string
	WorkDir string
}

var taskFields = []string{"command", "args", "work_dir"}

// parseTaskConfig validates and parses a task's config block, listing every
// problem.
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
	tc.WorkDir, _, err = drivers.ConfigString(m, "work_dir")
	add(err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &tc, nil
}

// pluginFields are accepted in plugin "raw_exec" { config {...} };
// no_cgroups is accepted for Nomad compatibility and ignored (no cgroups).
var pluginFields = []string{"enabled", "no_cgroups"}

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// resolveCommand finds the executable: a path with a slash is taken relative
// to the task dir; a bare name is looked up in the task's PATH, then the
// agent's.
func resolveCommand(command, taskDir string, env map[string]string) (string, error) {
	if strings.Contains(command, "/") {
		p := command
		if !filepath.IsAbs(p) {
			p = filepath.Join(taskDir, p)
		}
		if err := checkExecutable(p); err != nil {
			return "", fmt.Errorf("command %q: %w", command, err)
		}
		return p, nil
	}
	var dirs []string
	for _, path := range []string{env["PATH"], os.Getenv("PATH"), defaultPath} {
		if path != "" {
			dirs = append(dirs, filepath.SplitList(path)...)
		}
	}
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(taskDir, dir)
		}
		p := filepath.Join(dir, command)
		if checkExecutable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in PATH", command)
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

// lookupUser returns the credentials to run as name, or nils when name is
// empty or the agent's own user.
func lookupUser(name string) (uid, gid *uint32, groups []uint32, err error) {
	if name == "" {
		return nil, nil, nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("user %q: %w", name, err)
	}
	if u.Uid == strconv.Itoa(os.Getuid()) {
		return nil, nil, nil, nil
	}
	if os.Getuid() != 0 {
		return nil, nil, nil, fmt.Errorf("user %q: running a task as another user needs the client to run as root", name)
	}
	parse := func(s string) (uint32, error) {
		n, err := strconv.ParseUint(s, 10, 32)
		return uint32(n), err
	}
	u32, err := parse(u.Uid)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("user %q: uid %q: %w", name, u.Uid, err)
	}
	g32, err := parse(u.Gid)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("user %q: gid %q: %w", name, u.Gid, err)
	}
	if gids, err := u.GroupIds(); err == nil {
		for _, g := range gids {
			if n, err := parse(g); err == nil {
				groups = append(groups, n)
			}
		}
	}
	return &u32, &g32, groups, nil
}

// envList renders env sorted by name.
func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
