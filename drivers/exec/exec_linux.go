//go:build linux

package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/rawexec"
)

// nsenterPath is util-linux's nsenter on the host; setprivPaths are where
// util-linux's setpriv is looked for in the task's root.
var (
	nsenterPath  = "/usr/bin/nsenter"
	setprivPaths = []string{"/usr/bin/setpriv", "/bin/setpriv", "/usr/sbin/setpriv", "/sbin/setpriv"}
)

// capNames are setpriv's names of the capabilities in taskCaps.
var capNames = map[int]string{
	capChown: "chown", capDacOverride: "dac_override", capFowner: "fowner", capFsetid: "fsetid",
	capKill: "kill", capSetgid: "setgid", capSetuid: "setuid", capSetpcap: "setpcap",
	capNetBindService: "net_bind_service", capSysChroot: "sys_chroot", capMknod: "mknod",
	capAuditWrite: "audit_write", capSetfcap: "setfcap",
}

var _ drivers.Execer = (*Driver)(nil)

// ExecTask runs opts.Command inside the running task's isolation: in the
// mount, PID, IPC and UTS namespaces of its init (those it does not share
// with the agent), with the task's root as its root and "/" as its working
// directory, as the task's user, with the task's capability bounding set,
// in the task's cgroup (when it has one) and with the task's environment.
// The command is looked up in the task's root.
//
// The Go runtime cannot enter a mount namespace once it runs several
// threads, so util-linux does it: nsenter (on the host, nsenterPath)
// enters the namespaces and the root, then execs setpriv (found in the
// task's root, setprivPaths), which sets the credentials and the bounding
// set and execs the command. nsenter starts in the task's cgroup, so
// everything it starts is in it too.
func (d *Driver) ExecTask(ctx context.Context, taskID string, opts *drivers.ExecOptions) (*drivers.ExitResult, error) {
	if opts == nil || len(opts.Command) == 0 || opts.Command[0] == "" {
		return nil, errors.New("exec: exec needs a command")
	}
	if hs := d.support(); hs.err != nil {
		return nil, fmt.Errorf("%w: %v", drivers.ErrExecNotSupported, hs.err)
	}
	info, err := d.Task(taskID)
	if err != nil {
		return nil, err
	}
	pid := info.State.TaskPID
	if info.Exited || !rawexec.ProcessAlive(pid, info.State.TaskStartTime) {
		return nil, fmt.Errorf("exec: task %s has exited", taskID)
	}
	cfg := info.Config
	if err := sameFile(fmt.Sprintf("/proc/%d/root", pid), cfg.TaskDir); err != nil {
		return nil, fmt.Errorf("%w: the task's root is not its own mount namespace's root (%v); alloc exec could not be confined to it", drivers.ErrExecNotSupported, err)
	}
	if _, err := os.Stat(nsenterPath); err != nil {
		return nil, fmt.Errorf("%w: alloc exec into exec tasks needs util-linux nsenter on the host: %v", drivers.ErrExecNotSupported, err)
	}
	view := newRootView(cfg, d.pluginConfig().ChrootEnv)
	setpriv := ""
	for _, p := range setprivPaths {
		// setpriv runs with nsenter's privileges before it drops them: only
		// the host's copy in a read-only chroot_env directory will do, never
		// a file the task could have written.
		if host, ok := view.readOnlyHostPath(p); ok && checkExecutable(host) == nil {
			setpriv = p
			break
		}
	}
	if setpriv == "" {
		return nil, fmt.Errorf("%w: alloc exec into exec tasks needs util-linux setpriv in a read-only chroot_env directory of the task's root (one of %s)", drivers.ErrExecNotSupported, strings.Join(setprivPaths, ", "))
	}
	user := cfg.User
	if user == "" {
		user = defaultUser
	}
	uid, gid, groups, err := rawexec.LookupUser(user)
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	if uid == nil { // the agent's own user: root
		zero := uint32(0)
		uid, gid = &zero, &zero
	}
	args := append(nsenterArgs(pid), setprivArgs(setpriv, *uid, *gid, groups)...)
	args = append(args, opts.Command...)
	cmd := osexec.Command(nsenterPath, args...)
	cmd.Env = rawexec.EnvList(view.taskEnv(cfg.Env))
	cmd.Dir = "/"
	attr := &syscall.SysProcAttr{}
	if cg := filepath.Join(cgroupRoot, cgroupParent, cgroupName(taskID)); d.support().cgroupErr == nil {
		if dir, err := os.Open(cg); err == nil {
			defer dir.Close()
			attr.UseCgroupFD, attr.CgroupFD = true, int(dir.Fd())
		}
	}
	return rawexec.RunExec(ctx, cmd, attr, opts)
}

// nsenterArgs are nsenter's arguments to enter the namespaces of pid that
// differ from the agent's, and pid's root and working directory.
func nsenterArgs(pid int) []string {
	args := []string{"--target", strconv.Itoa(pid)}
	for _, ns := range []struct{ name, flag string }{{"mnt", "--mount"}, {"uts", "--uts"}, {"ipc", "--ipc"}, {"pid", "--pid"}} {
		theirs, err1 := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns.name))
		ours, err2 := os.Readlink("/proc/self/ns/" + ns.name)
		if err1 != nil || err2 != nil || theirs != ours {
			args = append(args, ns.flag)
		}
	}
	return append(args, "--root", "--wd", "--")
}

// setprivArgs are the arguments (setpriv itself first) that make setpriv
// run the command as uid:gid with groups and the task's bounding set,
// nothing inheritable.
func setprivArgs(setpriv string, uid, gid uint32, groups []uint32) []string {
	var caps []string
	for c := range taskCaps {
		caps = append(caps, "+"+capNames[c])
	}
	sort.Strings(caps)
	args := []string{setpriv, "--reuid", strconv.FormatUint(uint64(uid), 10), "--regid", strconv.FormatUint(uint64(gid), 10)}
	if len(groups) == 0 {
		args = append(args, "--clear-groups")
	} else {
		gs := make([]string, len(groups))
		for i, g := range groups {
			gs[i] = strconv.FormatUint(uint64(g), 10)
		}
		args = append(args, "--groups", strings.Join(gs, ","))
	}
	return append(args, "--inh-caps", "-all", "--bounding-set", "-all,"+strings.Join(caps, ","), "--")
}

// sameFile returns nil when a and b are the same directory.
func sameFile(a, b string) error {
	fa, err := os.Stat(a)
	if err != nil {
		return err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return err
	}
	if !os.SameFile(fa, fb) {
		return fmt.Errorf("%s is not %s", a, b)
	}
	return nil
}
