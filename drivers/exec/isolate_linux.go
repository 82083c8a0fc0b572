//go:build linux

package exec

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/drover-project/drover/drivers/rawexec"
	"github.com/drover-project/drover/helper/pathguard"
)

// initArg is os.Args[1] of a namespace init (see runInit).
const initArg = "__drover_exec_init"

// initReadyTimeout bounds how long the executor waits for the init to set
// up the task's root and start the task.
var initReadyTimeout = 30 * time.Second

func init() {
	rawexec.RegisterWrapper(wrapperName, wrap)
	rawexec.RegisterHelper(initArg, runInit)
}

// initSpec is what the executor hands the namespace init (on fd 4).
type initSpec struct {
	isoSpec
	Path   string
	Args   []string
	Env    []string
	Dir    string
	UID    *uint32 `json:",omitempty"`
	GID    *uint32 `json:",omitempty"`
	Groups []uint32
	// CgroupFD tells the init that fd 5 is the task's cgroup dir.
	CgroupFD bool
}

// initMsg is what the init reports on fd 3: first Ready or Error, then the
// task's exit.
type initMsg struct {
	Ready    bool   `json:",omitempty"`
	Error    string `json:",omitempty"`
	Exited   bool   `json:",omitempty"`
	ExitCode int    `json:",omitempty"`
	Signal   int    `json:",omitempty"`
}

// mountpoints are the paths (relative to the root) created in the task dir
// on the host for the namespace's mounts; they stay empty on the host, the
// mounts living only in the task's mount namespace.
func mountpoints(s *isoSpec) []mountpoint {
	mps := []mountpoint{{Path: "/proc", Dir: true}, {Path: "/dev", Dir: true}}
	for _, b := range s.Binds {
		fi, err := os.Stat(b.Src)
		if err != nil {
			continue
		}
		mps = append(mps, mountpoint{Path: b.Dst, Dir: fi.IsDir()})
	}
	return mps
}

type mountpoint struct {
	Path string
	Dir  bool
}

// prepareRoot creates the mountpoints in the task dir and returns what it
// created, deepest last, for removal once the task is gone. Each mountpoint
// must stay inside the task dir after symlinks (an earlier run of the task
// may have replaced a directory of its root with a symlink to a host
// path): one that leaves it fails the start, naming it, before anything
// is created. Missing parents are created one by one below the resolved
// path, never through a symlink.
func prepareRoot(s *isoSpec) ([]string, error) {
	var created []string
	realRoot, err := filepath.EvalSymlinks(s.Root)
	if err != nil {
		return nil, err
	}
	for _, mp := range mountpoints(s) {
		target, err := inTaskDir(s.Root, filepath.Join(s.Root, mp.Path))
		if err != nil {
			return created, fmt.Errorf("mountpoint %s: %w", mp.Path, err)
		}
		var missing []string
		for p := filepath.Dir(target); strings.HasPrefix(p, realRoot+"/"); p = filepath.Dir(p) {
			if _, err := os.Lstat(p); err == nil {
				break
			}
			missing = append([]string{p}, missing...)
		}
		for _, p := range missing {
			if err := os.Mkdir(p, 0o755); err != nil {
				return created, err
			}
			created = append(created, p)
		}
		if _, err := os.Lstat(target); err == nil {
			continue
		}
		if mp.Dir {
			if err := os.Mkdir(target, 0o755); err != nil {
				return created, err
			}
		} else {
			f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o644)
			if err != nil {
				return created, err
			}
			f.Close()
		}
		created = append(created, target)
	}
	return created, nil
}

// removeCreated removes what prepareRoot created, deepest first. Only empty
// directories and empty files are removed: a mount that were somehow
// visible on the host would make its mountpoint non-empty, and stay. A
// path the task has since routed through a symlink (it no longer resolves
// to itself inside root) is left alone, so no host path is removed.
func removeCreated(root string, created []string) {
	for i := len(created) - 1; i >= 0; i-- {
		p := created[i]
		if resolved, err := pathguard.Within(root, p); err != nil || resolved != p {
			continue
		}
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if !fi.IsDir() && fi.Size() != 0 {
			continue
		}
		_ = os.Remove(p) // fails on a non-empty directory
	}
}

// wrap runs in the executor: instead of the task it starts a re-execution
// of this binary as the namespace init (runInit) in new mount, PID, IPC and
// UTS namespaces, which builds the task's root and starts the task in it.
func wrap(cmd *osexec.Cmd, raw json.RawMessage) (*rawexec.Wrapped, error) {
	var s isoSpec
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("exec: decoding isolation spec: %w", err)
	}
	is := initSpec{isoSpec: s, Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir}
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Credential != nil {
		c := cmd.SysProcAttr.Credential
		uid, gid := c.Uid, c.Gid
		is.UID, is.GID, is.Groups = &uid, &gid, c.Groups
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("exec: finding own executable: %w", err)
	}
	created, err := prepareRoot(&s)
	if err != nil {
		removeCreated(s.Root, created)
		return nil, fmt.Errorf("exec: preparing the task's root: %w", err)
	}
	var cgDir *os.File
	cleanup := func() {
		if cgDir != nil {
			_ = cgDir.Close()
		}
		if s.Cgroup != nil {
			s.Cgroup.remove()
		}
		removeCreated(s.Root, created)
	}
	if s.Cgroup != nil {
		if cgDir, err = s.Cgroup.create(); err != nil {
			s.Cgroup = nil // create removed it
			cleanup()
			return nil, fmt.Errorf("exec: %w", err)
		}
		is.CgroupFD = true
	}
	specBytes, err := json.Marshal(is)
	if err != nil {
		cleanup()
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		cleanup()
		return nil, err
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		statusR.Close()
		statusW.Close()
		cleanup()
		return nil, err
	}
	go func() {
		_, _ = specW.Write(specBytes)
		_ = specW.Close()
	}()

	cmd.Path = self
	cmd.Args = []string{self, initArg}
	cmd.Env = []string{}
	cmd.Dir = s.Root
	cmd.ExtraFiles = []*os.File{statusW, specR}
	if cgDir != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, cgDir)
	}
	flags := uintptr(syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS)
	if s.PIDNS {
		flags |= syscall.CLONE_NEWPID
	}
	if s.IPCNS {
		flags |= syscall.CLONE_NEWIPC
	}
	// The init runs as root (it mounts); it drops to the task's user
	// when it starts the task. It leads the task's process group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Cloneflags: flags}

	dec := json.NewDecoder(statusR)
	var last initMsg
	return &rawexec.Wrapped{
		Started: func() error {
			statusW.Close()
			specR.Close()
			_ = statusR.SetReadDeadline(time.Now().Add(initReadyTimeout))
			var m initMsg
			if err := dec.Decode(&m); err != nil {
				return fmt.Errorf("exec: the task's init did not report: %w", err)
			}
			_ = statusR.SetReadDeadline(time.Time{})
			if m.Error != "" {
				return errors.New("exec: " + m.Error)
			}
			return nil
		},
		Exit: func(ps *os.ProcessState) (int, int, bool) {
			code, sig := rawexec.WaitStatus(ps)
			if err := dec.Decode(&last); err == nil && last.Exited {
				code, sig = last.ExitCode, last.Signal
			}
			oom := s.Cgroup != nil && s.Cgroup.oomKilled()
			return code, sig, oom
		},
		Cleanup: func() {
			statusR.Close()
			statusW.Close()
			specR.Close()
			cleanup()
		},
	}, nil
}

// runInit is the namespace init: PID 1 of the task's PID namespace (unless
// pid_mode = "host"), in the task's own mount namespace. It makes every
// mount private, builds the task's root, starts the task in it, reaps
// every process that ends up its child, and reports the task's exit on fd
// 3. The task runs in the init's process group, so signals to the group
// reach it; the init catches them only so that they do not kill it. When
// the init exits, the kernel kills what is left in the namespace and the
// mounts go with it.
func runInit(args []string) int {
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	status := os.NewFile(3, "status")
	enc := json.NewEncoder(status)
	fail := func(err error) int {
		_ = enc.Encode(initMsg{Error: err.Error()})
		return 1
	}
	if len(args) != 0 {
		return fail(errors.New("init: no arguments expected"))
	}
	var spec initSpec
	specF := os.NewFile(4, "spec")
	err := json.NewDecoder(specF).Decode(&spec)
	specF.Close()
	if err != nil {
		return fail(fmt.Errorf("init: decoding spec: %w", err))
	}
	ignoreSignals()
	if err := setupRoot(&spec.isoSpec); err != nil {
		return fail(err)
	}
	if spec.Hostname != "" {
		if err := syscall.Sethostname([]byte(spec.Hostname)); err != nil {
			return fail(fmt.Errorf("setting hostname: %w", err))
		}
	}
	attr := &syscall.SysProcAttr{}
	if err := pivotRoot(spec.Root); err != nil {
		// Some roots (an initramfs) cannot be pivoted away from.
		fmt.Fprintf(os.Stderr, "exec: %v; confining the task with chroot instead\n", err)
		attr.Chroot = spec.Root
	}
	if spec.UID != nil && spec.GID != nil {
		attr.Credential = &syscall.Credential{Uid: *spec.UID, Gid: *spec.GID, Groups: spec.Groups}
	}
	if spec.CgroupFD {
		syscall.CloseOnExec(5)
		attr.UseCgroupFD = true
		attr.CgroupFD = 5
	}
	dir := spec.Dir
	if dir == "" {
		dir = "/"
	}
	task := &osexec.Cmd{
		Path: spec.Path, Args: spec.Args, Env: spec.Env, Dir: dir,
		Stdout: os.Stdout, Stderr: os.Stderr, SysProcAttr: attr,
	}
	// The task is forked from this thread, with its smaller bounding set;
	// the thread stays locked (and the init keeps no use for the rest).
	lockOSThread()
	if err := dropBoundingCaps(); err != nil {
		return fail(err)
	}
	if err := task.Start(); err != nil {
		return fail(fmt.Errorf("starting %s in the task's root: %w", spec.Path, err))
	}
	_ = enc.Encode(initMsg{Ready: true})
	code, sig := reapUntil(task.Process.Pid)
	_ = enc.Encode(initMsg{Exited: true, ExitCode: code, Signal: sig})
	return 0
}

// reapUntil reaps children (the task, and orphans that the init inherits as
// PID 1) until pid exits, and returns pid's exit code and signal.
func reapUntil(pid int) (code, sig int) {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return -1, 0 // no children left: should not happen before pid
		}
		if got != pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal()), int(ws.Signal())
		}
		return ws.ExitStatus(), 0
	}
}

// setupRoot builds the task's root in the init's mount namespace.
func setupRoot(s *isoSpec) error {
	// Nothing mounted below may propagate back to the host.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	// The root must be a mount point to become the namespace's root.
	if err := syscall.Mount(s.Root, s.Root, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind-mounting the task dir on itself: %w", err)
	}
	for _, b := range s.Binds {
		// Resolved again: nothing may be mounted over a host path.
		target, err := inTaskDir(s.Root, filepath.Join(s.Root, b.Dst))
		if err != nil {
			return fmt.Errorf("bind-mounting %s at %s: %w", b.Src, b.Dst, err)
		}
		if _, err := os.Lstat(target); err != nil {
			continue // the host path vanished since the executor looked
		}
		if err := syscall.Mount(b.Src, target, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mounting %s at %s: %w", b.Src, b.Dst, err)
		}
		if b.ReadOnly {
			flags := uintptr(syscall.MS_BIND | syscall.MS_REMOUNT | syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV)
			if err := syscall.Mount("", target, "", flags, ""); err != nil {
				return fmt.Errorf("making %s read-only: %w", b.Dst, err)
			}
		}
	}
	proc, err := inTaskDir(s.Root, filepath.Join(s.Root, "proc"))
	if err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	if err := syscall.Mount("proc", proc, "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	dev, err := inTaskDir(s.Root, filepath.Join(s.Root, "dev"))
	if err != nil {
		return fmt.Errorf("mounting /dev: %w", err)
	}
	return setupDev(dev)
}

// pivotRoot makes root the root of the init's mount namespace and detaches
// the host's root from it, so that nothing in the namespace, root or not,
// can reach a host path outside root again (a chroot alone can be escaped
// by a process that may chroot).
func pivotRoot(root string) error {
	if err := os.Chdir(root); err != nil {
		return err
	}
	// pivot_root(".", "."): the old root ends up stacked on the new one,
	// and unmounting "." detaches it.
	if err := syscall.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root to the task dir: %w", err)
	}
	if err := syscall.Unmount(".", syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the host's root: %w", err)
	}
	return os.Chdir("/")
}

// devices are bind-mounted from the host into the task's /dev, a tmpfs.
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

func setupDev(dev string) error {
	if err := syscall.Mount("tmpfs", dev, "tmpfs", syscall.MS_NOSUID|syscall.MS_NOEXEC, "mode=755,size=65536k"); err != nil {
		return fmt.Errorf("mounting /dev: %w", err)
	}
	for _, d := range devices {
		src := "/dev/" + d
		if _, err := os.Stat(src); err != nil {
			continue
		}
		target := filepath.Join(dev, d)
		f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			return err
		}
		f.Close()
		if err := syscall.Mount(src, target, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind-mounting %s: %w", src, err)
		}
	}
	shm := filepath.Join(dev, "shm")
	if err := os.Mkdir(shm, 0o1777); err != nil {
		return err
	}
	if err := syscall.Mount("shm", shm, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=1777,size=65536k"); err != nil {
		return fmt.Errorf("mounting /dev/shm: %w", err)
	}
	for name, target := range map[string]string{
		"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return err
		}
	}
	return nil
}

// ignoreSignals makes the init survive the signals sent to the task's
// process group (a namespace's PID 1 gets only the signals it handles;
// an init outside a PID namespace would otherwise die of them).
func ignoreSignals() {
	ch := make(chan os.Signal, 16)
	notify(ch)
	go func() {
		for range ch {
		}
	}()
}

func killPID(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// probeNamespaces checks, in this process, that a thread may enter new
// mount, PID, IPC and UTS namespaces and make its mounts private; the thread
// is thrown away afterwards.
func probeNamespaces() error {
	errc := make(chan error, 1)
	go func() {
		// Locked and never unlocked: the runtime ends the thread with
		// the goroutine, so its namespaces never leak into the agent.
		lockOSThread()
		flags := syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS
		if err := syscall.Unshare(flags); err != nil {
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
			errc <- fmt.Errorf("private mounts: %w", err)
			return
		}
		errc <- nil
	}()
	return <-errc
}
