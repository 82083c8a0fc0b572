//go:build linux

package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/rawexec"
)

// escapeArg makes this test binary, copied into a task, try the classic
// chroot escape (see TestRootCannotEscape).
const escapeArg = "drover-exec-escape-test"

func TestMain(m *testing.M) {
	// The executor and the namespace init are re-executions of this
	// binary.
	rawexec.MaybeRunExecutor()
	if len(os.Args) == 3 && os.Args[1] == escapeArg {
		os.Exit(tryEscape(os.Args[2]))
	}
	os.Exit(m.Run())
}

// tryEscape chroots into a subdirectory while its working directory stays
// outside it, climbs up and chroots there: out of a plain chroot this
// reaches the host's root. It prints whether hostPath became visible.
func tryEscape(hostPath string) int {
	_ = os.MkdirAll("/tmp/escape", 0o755)
	if err := syscall.Chroot("/tmp/escape"); err != nil {
		fmt.Println("escape=chroot-refused:", err)
		return 0
	}
	for range 64 {
		_ = syscall.Chdir("..")
	}
	if err := syscall.Chroot("."); err != nil {
		fmt.Println("escape=chroot-refused:", err)
		return 0
	}
	if _, err := os.Stat(hostPath); err == nil {
		fmt.Println("escape=escaped")
		return 0
	}
	fmt.Println("escape=contained")
	return 0
}

// needRoot skips, loudly, a test that needs the driver to be able to run
// tasks (root, namespaces).
func needRoot(t *testing.T) *Driver {
	t.Helper()
	d := New(hclog.NewNullLogger())
	if err := d.support().err; err != nil {
		t.Skipf("SKIPPED: the exec driver cannot run tasks here (euid %d): %v", os.Geteuid(), err)
	}
	return d
}

// newTask returns a task config in a fresh alloc dir laid out like the
// client's: <root>/alloc (shared, with logs/ and data/) and <root>/web.
func newTask(t *testing.T, command string, args ...string) *drivers.TaskConfig {
	t.Helper()
	root := t.TempDir()
	// t.TempDir's parent is 0700: the task's user need not traverse it,
	// only its own root.
	allocDir := filepath.Join(root, "alloc")
	for _, d := range []string{"logs", "data"} {
		require.NoError(t, os.MkdirAll(filepath.Join(allocDir, d), 0o777))
		require.NoError(t, os.Chmod(filepath.Join(allocDir, d), 0o777))
	}
	taskDir := filepath.Join(root, "web")
	anyArgs := make([]any, len(args))
	for i, a := range args {
		anyArgs[i] = a
	}
	return &drivers.TaskConfig{
		ID: "alloc1/web", AllocID: "alloc1", TaskName: "web", TaskGroup: "g", JobName: "j", Namespace: "default",
		Config: map[string]any{"command": command, "args": anyArgs},
		Env: map[string]string{
			"NOMAD_TASK_DIR":  filepath.Join(taskDir, "local"),
			"NOMAD_ALLOC_DIR": allocDir,
		},
		AllocDir:   allocDir,
		TaskDir:    taskDir,
		PrivateDir: filepath.Join(root, ".private", "web"),
		StdoutPath: filepath.Join(allocDir, "logs", "web.stdout.0"),
		StderrPath: filepath.Join(allocDir, "logs", "web.stderr.0"),
		MemoryMB:   64,
		CPU:        100,
	}
}

func start(t *testing.T, d *Driver, cfg *drivers.TaskConfig) *drivers.TaskHandle {
	t.Helper()
	h, err := d.StartTask(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	return h
}

func wait(t *testing.T, d *Driver, id string, within time.Duration) *drivers.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	ch, err := d.WaitTask(ctx, id)
	require.NoError(t, err)
	res, ok := <-ch
	require.True(t, ok, "task %s did not exit within %s", id, within)
	return res
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// TestIsolation runs a script that looks around from inside the task and
// checks what it saw.
func TestIsolation(t *testing.T) {
	d := needRoot(t)
	// A host file outside the task's root, which the task must not see.
	secret := filepath.Join(t.TempDir(), "host-only")
	require.NoError(t, os.WriteFile(secret, []byte("x"), 0o644))

	script := strings.Join([]string{
		`echo "ppid=$PPID"`,
		`echo "pid1=$(tr '\0' ' ' < /proc/1/cmdline)"`,
		`echo "procs=$(ls /proc | grep -c '^[0-9]')"`,
		`echo "uid=$(id -u)"`,
		`echo "taskdir=$NOMAD_TASK_DIR allocdir=$NOMAD_ALLOC_DIR"`,
		`if [ -e ` + secret + ` ]; then echo host=visible; else echo host=hidden; fi`,
		`if touch /usr/drover-exec-test 2>/dev/null; then echo usr=writable; else echo usr=readonly; fi`,
		`echo hi > /local/out && echo local=ok`,
		`echo shared > /alloc/data/from-task && echo alloc=ok`,
		`echo "hostname=$(cat /proc/sys/kernel/hostname)"`,
		`echo "root=$(ls -A / | tr '\n' ' ')"`,
		`echo "zero=$(head -c 4 /dev/zero | od -An -tx1 | tr -d ' ')"`,
		`if echo x > /dev/null; then echo null=ok; fi`,
	}, "; ")
	cfg := newTask(t, "/bin/sh", "-c", script)
	start(t, d, cfg)

	// While the task runs, none of its mounts is visible on the host.
	res := wait(t, d, cfg.ID, 20*time.Second)
	out := readFile(t, cfg.StdoutPath)
	require.True(t, res.Successful(), "result %s\nstdout:\n%s\nstderr:\n%s", res, out, readFile(t, cfg.StderrPath))

	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(l, "=")
		lines[k] = v
	}
	require.Equal(t, "1", lines["ppid"], "the task is a child of PID 1 of its own PID namespace:\n%s", out)
	require.Contains(t, lines["pid1"], initArg, "PID 1 is the task's init, not the host's")
	procs, err := strconv.Atoi(lines["procs"])
	require.NoError(t, err)
	require.Less(t, procs, 10, "the task sees only its namespace's processes")
	require.Equal(t, "65534", lines["uid"], "a task without user runs as nobody")
	require.Equal(t, "/local allocdir=/alloc", lines["taskdir"], "directory variables are paths in the task's root")
	require.Equal(t, "hidden", lines["host"], "host paths outside the chroot are invisible")
	require.Equal(t, "readonly", lines["usr"])
	require.Equal(t, "ok", lines["local"])
	require.Equal(t, "ok", lines["alloc"])
	require.Equal(t, "00000000", lines["zero"], "devices work in the task's /dev")
	require.Equal(t, "ok", lines["null"])
	require.Contains(t, lines["root"], "local")
	require.Contains(t, lines["root"], "usr")
	require.NotContains(t, lines["root"], "work", "the host's / is not the task's")
	require.NotContains(t, lines["root"], ".drover", "the executor's files are not in the task's root")
	host, _ := os.Hostname()
	require.Equal(t, host, lines["hostname"])

	require.Equal(t, "hi\n", readFile(t, filepath.Join(cfg.TaskDir, "local", "out")))
	require.Equal(t, "shared\n", readFile(t, filepath.Join(cfg.AllocDir, "data", "from-task")))
	_, err = os.Stat("/usr/drover-exec-test")
	require.ErrorIs(t, err, os.ErrNotExist)

	// The mountpoints made in the task dir are gone with the task.
	for _, p := range []string{"usr", "bin", "etc", "proc", "dev", "alloc"} {
		_, err := os.Lstat(filepath.Join(cfg.TaskDir, p))
		require.ErrorIs(t, err, os.ErrNotExist, "mountpoint %s left behind", p)
	}
	for _, p := range []string{"local", "secrets", "tmp"} {
		require.DirExists(t, filepath.Join(cfg.TaskDir, p))
	}
}

// TestMountsStayInTheTask checks that a running task's mounts are not in
// the host's mount table.
func TestMountsStayInTheTask(t *testing.T) {
	d := needRoot(t)
	cfg := newTask(t, "/bin/sh", "-c", "touch /local/ready; sleep 60")
	start(t, d, cfg)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(cfg.TaskDir, "local", "ready"))
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	require.NotContains(t, readFile(t, "/proc/self/mountinfo"), cfg.TaskDir)
	// From the host the mountpoints are empty.
	entries, err := os.ReadDir(filepath.Join(cfg.TaskDir, "usr"))
	require.NoError(t, err)
	require.Empty(t, entries)
	require.NoError(t, d.StopTask(cfg.ID, 5*time.Second, ""))
}

func TestExitCodeAndStderr(t *testing.T) {
	d := needRoot(t)
	cfg := newTask(t, "sh", "-c", "echo out; echo err >&2; exit 7")
	start(t, d, cfg)
	res := wait(t, d, cfg.ID, 20*time.Second)
	require.Equal(t, 7, res.ExitCode)
	require.Zero(t, res.Signal)
	require.Equal(t, "out\n", readFile(t, cfg.StdoutPath))
	require.Equal(t, "err\n", readFile(t, cfg.StderrPath))
}

func TestStopAndKill(t *testing.T) {
	d := needRoot(t)

	cfg := newTask(t, "/bin/sleep", "60")
	start(t, d, cfg)
	began := time.Now()
	require.NoError(t, d.StopTask(cfg.ID, 10*time.Second, "SIGTERM"))
	require.Less(t, time.Since(began), 5*time.Second, "SIGTERM reaches the task, not only its init")
	res := wait(t, d, cfg.ID, time.Second)
	require.Equal(t, int(syscall.SIGTERM), res.Signal)

	cfg = newTask(t, "/bin/sh", "-c", `trap "" TERM; touch /local/ready; while true; do sleep 1; done`)
	cfg.ID = "alloc2/web"
	start(t, d, cfg)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(cfg.TaskDir, "local", "ready"))
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, d.StopTask(cfg.ID, 300*time.Millisecond, "SIGTERM"))
	res = wait(t, d, cfg.ID, time.Second)
	require.Equal(t, int(syscall.SIGKILL), res.Signal)
	require.Equal(t, 137, res.ExitCode)
}

func TestSignalTask(t *testing.T) {
	d := needRoot(t)
	cfg := newTask(t, "/bin/sh", "-c", `trap 'echo got usr1; exit 5' USR1; touch /local/ready; while true; do sleep 0.1; done`)
	start(t, d, cfg)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(cfg.TaskDir, "local", "ready"))
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, d.SignalTask(cfg.ID, "SIGUSR1"))
	res := wait(t, d, cfg.ID, 10*time.Second)
	require.Equal(t, 5, res.ExitCode)
	require.Equal(t, "got usr1\n", readFile(t, cfg.StdoutPath))
}

func TestRecover(t *testing.T) {
	a := needRoot(t)
	cfg := newTask(t, "/bin/sleep", "60")
	h := start(t, a, cfg)
	require.Equal(t, Name, h.Driver)

	b := New(hclog.NewNullLogger())
	require.NoError(t, b.RecoverTask(h))
	st, err := b.InspectTask(cfg.ID)
	require.NoError(t, err)
	require.Equal(t, drivers.TaskStateRunning, st.State)
	require.NoError(t, b.StopTask(cfg.ID, 5*time.Second, ""))
	require.Equal(t, int(syscall.SIGTERM), wait(t, b, cfg.ID, 5*time.Second).Signal)
}

func TestStartErrors(t *testing.T) {
	d := needRoot(t)
	cfg := newTask(t, "no-such-command-drover")
	_, err := d.StartTask(cfg)
	require.ErrorContains(t, err, `command "no-such-command-drover" not found in the task's root`)

	// A host binary outside chroot_env is not in the task's root.
	cfg = newTask(t, os.Args[0])
	_, err = d.StartTask(cfg)
	require.ErrorContains(t, err, "in the task's root")

	cfg = newTask(t, "/bin/true")
	cfg.User = "no-such-user-drover"
	_, err = d.StartTask(cfg)
	require.ErrorContains(t, err, "no-such-user-drover")
}

// TestMemoryLimit needs a writable cgroup v2 with the memory controller.
func TestMemoryLimit(t *testing.T) {
	d := needRoot(t)
	if err := d.support().cgroupErr; err != nil {
		t.Skipf("SKIPPED: no cgroup v2 for exec tasks on this host: %v", err)
	}
	cfg := newTask(t, "/bin/sh", "-c", "touch /local/ready; sleep 60")
	cfg.MemoryMB = 32
	start(t, d, cfg)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(cfg.TaskDir, "local", "ready"))
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	cg := filepath.Join(cgroupRoot, cgroupParent, cgroupName(cfg.ID))
	require.Equal(t, strconv.Itoa(32<<20), strings.TrimSpace(readFile(t, filepath.Join(cg, "memory.max"))))
	require.Equal(t, strconv.Itoa(cpuWeight(100)), strings.TrimSpace(readFile(t, filepath.Join(cg, "cpu.weight"))))
	require.NoError(t, d.StopTask(cfg.ID, 5*time.Second, ""))
	wait(t, d, cfg.ID, 5*time.Second)
	require.NoDirExists(t, cg, "the task's cgroup is removed with it")

	// tail keeps a line without a newline in memory: /dev/zero never ends
	// one, so it grows until the kernel kills it.
	cfg = newTask(t, "tail", "/dev/zero")
	cfg.ID = "alloc2/web"
	cfg.MemoryMB = 32
	start(t, d, cfg)
	res := wait(t, d, cfg.ID, 60*time.Second)
	require.True(t, res.OOMKilled, "result %s", res)
	require.Equal(t, int(syscall.SIGKILL), res.Signal)
}

func TestFingerprint(t *testing.T) {
	d := New(hclog.NewNullLogger())
	fp := d.Fingerprint(context.Background())
	if os.Geteuid() != 0 {
		require.False(t, fp.Detected)
		require.False(t, fp.Healthy)
		require.Equal(t, "exec driver must run as root", fp.HealthDescription)
		_, err := d.StartTask(newTask(t, "/bin/true"))
		require.ErrorContains(t, err, "must run as root")
		return
	}
	if err := d.support().err; err != nil {
		require.False(t, fp.Detected)
		require.Equal(t, err.Error(), fp.HealthDescription)
		return
	}
	require.True(t, fp.Detected)
	require.True(t, fp.Healthy)
	require.Equal(t, "1", fp.Attributes["driver.exec"])
	want := "true"
	if d.support().cgroupErr != nil {
		want = "false"
		require.Contains(t, fp.HealthDescription, "no resource limits")
	}
	require.Equal(t, want, fp.Attributes["driver.exec.cgroup_v2"])
}

func TestValidateConfig(t *testing.T) {
	d := New(nil)
	require.NoError(t, d.ValidateTaskConfig(map[string]any{"command": "/bin/true", "args": []any{"a"}, "pid_mode": "host"}))
	for name, tc := range map[string]struct {
		config map[string]any
		want   string
	}{
		"missing command": {map[string]any{}, "command is required"},
		"bad pid_mode":    {map[string]any{"command": "x", "pid_mode": "shared"}, `pid_mode must be "private" or "host", got "shared"`},
		"bad ipc_mode":    {map[string]any{"command": "x", "ipc_mode": 1.0}, "ipc_mode must be a string"},
		"unknown field":   {map[string]any{"command": "x", "image": "redis"}, "image is not a known option"},
	} {
		t.Run(name, func(t *testing.T) {
			require.ErrorContains(t, d.ValidateTaskConfig(tc.config), tc.want)
		})
	}
	require.NoError(t, d.SetConfig(map[string]any{"chroot_env": map[string]any{"/bin": "/bin", "/etc/passwd": "/etc/passwd"}}))
	require.Equal(t, map[string]string{"/bin": "/bin", "/etc/passwd": "/etc/passwd"}, d.pluginConfig().ChrootEnv)
	require.ErrorContains(t, d.SetConfig(map[string]any{"chroot_env": map[string]any{"bin": "/bin"}}), "chroot_env paths must be absolute")
	require.ErrorContains(t, d.SetConfig(map[string]any{"chroot_env": map[string]any{"/": "/"}}), "not the root")
	require.ErrorContains(t, d.SetConfig(map[string]any{"default_ipc_mode": "none"}), "default_ipc_mode")
}

func TestRootView(t *testing.T) {
	root := t.TempDir()
	cfg := &drivers.TaskConfig{TaskDir: filepath.Join(root, "web"), AllocDir: filepath.Join(root, "alloc")}
	require.NoError(t, os.MkdirAll(filepath.Join(cfg.TaskDir, "local"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cfg.TaskDir, "local", "tool"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cfg.TaskDir, "local", "data"), []byte("x"), 0o644))
	v := newRootView(cfg, map[string]string{"/usr": "/usr", "/no/such/dir": "/opt"})

	require.Equal(t, "/usr/bin/env", v.hostPath("/usr/bin/env"))
	require.Equal(t, filepath.Join(cfg.TaskDir, "local/tool"), v.hostPath("/local/tool"))
	require.Equal(t, filepath.Join(cfg.AllocDir, "data"), v.hostPath("/alloc/data"))
	require.Equal(t, filepath.Join(cfg.TaskDir, "opt"), v.hostPath("/opt"), "a missing host path is not bound")

	// Only the read-only chroot_env binds hold the host's own files: what
	// alloc exec may run before dropping privileges.
	host, ok := v.readOnlyHostPath("/usr/bin/setpriv")
	require.True(t, ok)
	require.Equal(t, "/usr/bin/setpriv", host)
	for _, taskWritable := range []string{"/bin/setpriv", "/local/setpriv", "/alloc/setpriv", "/opt/setpriv"} {
		_, ok := v.readOnlyHostPath(taskWritable)
		require.False(t, ok, taskWritable)
	}

	p, err := v.resolveCommand("tool")
	require.NoError(t, err)
	require.Equal(t, "/local/tool", p)
	p, err = v.resolveCommand("env")
	require.NoError(t, err)
	require.Equal(t, "/usr/bin/env", p)
	p, err = v.resolveCommand("local/tool")
	require.NoError(t, err)
	require.Equal(t, "/local/tool", p)
	_, err = v.resolveCommand("/local/data")
	require.ErrorContains(t, err, "is not executable")
	_, err = v.resolveCommand("/bin/sh")
	require.ErrorContains(t, err, "in the task's root", "/bin is not in this chroot_env")

	require.Equal(t, "/local/x", v.taskPath(filepath.Join(cfg.TaskDir, "local/x")))
	require.Equal(t, "/alloc", v.taskPath(cfg.AllocDir))
	require.Equal(t, "/", v.taskPath(cfg.TaskDir))
	require.Equal(t, "/elsewhere", v.taskPath("/elsewhere"))
	require.Equal(t, filepath.Join(cfg.TaskDir+"x"), v.taskPath(cfg.TaskDir+"x"))

	// The task API's address names the socket by the task's path.
	env := v.taskEnv(map[string]string{
		"NOMAD_UNIX_ADDR": "unix://" + filepath.Join(cfg.TaskDir, "secrets", "api.sock"),
		"OTHER":           "unix://relative/sock",
	})
	require.Equal(t, "unix:///secrets/api.sock", env["NOMAD_UNIX_ADDR"])
	require.Equal(t, "unix://relative/sock", env["OTHER"])
}

func TestCPUWeight(t *testing.T) {
	require.Equal(t, 1, cpuWeight(0))
	require.Equal(t, 1, cpuWeight(2))
	require.Equal(t, 10000, cpuWeight(262144))
	require.Equal(t, 10000, cpuWeight(1<<30))
	require.Equal(t, 39, cpuWeight(1024))
	cg := newCgroupSpec("a.b", 100, 200, 500)
	require.Equal(t, int64(200<<20), cg.MemoryMax)
	require.Equal(t, int64(100<<20), cg.MemoryLow)
	cg = newCgroupSpec("a.b", 100, 0, 0)
	require.Equal(t, int64(100<<20), cg.MemoryMax)
	require.Zero(t, cg.MemoryLow)
	require.Zero(t, cg.CPUWeight)
}

// TestCgroupFiles checks what a task's cgroup gets written, against a
// plain directory standing for the hierarchy (the kernel's side is
// TestMemoryLimit's, where cgroup v2 is available).
func TestCgroupFiles(t *testing.T) {
	old := cgroupRoot
	cgroupRoot = t.TempDir()
	t.Cleanup(func() { cgroupRoot = old })

	cg := newCgroupSpec("alloc1.web", 32, 64, 1024)
	require.Equal(t, filepath.Join(cgroupRoot, cgroupParent, "alloc1.web"), cg.Path)
	require.NoError(t, os.MkdirAll(cg.Path, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cg.Path, "memory.swap.max"), []byte("max"), 0o644))
	f, err := cg.create()
	require.NoError(t, err)
	f.Close()
	for file, want := range map[string]string{
		"memory.max": strconv.Itoa(64 << 20), "memory.low": strconv.Itoa(32 << 20),
		"memory.swap.max": "0", "cpu.weight": "39",
	} {
		require.Equal(t, want, readFile(t, filepath.Join(cg.Path, file)), file)
	}
	require.False(t, cg.oomKilled())
	require.NoError(t, os.WriteFile(filepath.Join(cg.Path, "memory.events"), []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 0\n"), 0o644))
	require.False(t, cg.oomKilled())
	require.NoError(t, os.WriteFile(filepath.Join(cg.Path, "memory.events"), []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"), 0o644))
	require.True(t, cg.oomKilled())

	// A hierarchy without cgroup.controllers is no cgroup v2.
	require.ErrorContains(t, cgroupV2Usable(), "no cgroup v2 hierarchy")
	require.NoError(t, os.WriteFile(filepath.Join(cgroupRoot, "cgroup.controllers"), []byte("cpu io pids\n"), 0o644))
	require.ErrorContains(t, cgroupV2Usable(), "lacks the memory controller")
}

// TestRootTaskCapabilities runs a task as root: it keeps only the exec
// capability set, so it cannot mount or remount its way out.
func TestRootTaskCapabilities(t *testing.T) {
	d := needRoot(t)
	script := strings.Join([]string{
		`echo "uid=$(id -u)"`,
		`echo "mountbin=$(command -v mount)"`,
		`echo "capbnd=$(grep CapBnd /proc/self/status | cut -f2)"`,
		`echo "capeff=$(grep CapEff /proc/self/status | cut -f2)"`,
		`if mount -t tmpfs none /tmp 2>/dev/null; then echo mount=allowed; else echo mount=denied; fi`,
		`if mount -o remount,rw /usr 2>/dev/null; then echo remount=allowed; else echo remount=denied; fi`,
		`if touch /usr/drover-exec-root 2>/dev/null; then echo usr=writable; else echo usr=readonly; fi`,
	}, "; ")
	cfg := newTask(t, "/bin/sh", "-c", script)
	cfg.User = "root"
	t.Cleanup(func() { _ = os.Remove("/usr/drover-exec-root") }) // only there if the test fails
	start(t, d, cfg)
	res := wait(t, d, cfg.ID, 20*time.Second)
	out := readFile(t, cfg.StdoutPath)
	require.True(t, res.Successful(), "%s\n%s%s", res, out, readFile(t, cfg.StderrPath))
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(l, "=")
		lines[k] = v
	}
	want := fmt.Sprintf("%016x", taskCapMask())
	require.Equal(t, "0", lines["uid"], out)
	require.NotEmpty(t, lines["mountbin"], "mount(8) must be in the task's root for the mount checks to mean anything")
	require.Equal(t, want, lines["capbnd"], out)
	require.Equal(t, want, lines["capeff"], "root keeps only the bounding set: %s", out)
	require.Equal(t, "denied", lines["mount"], out)
	require.Equal(t, "denied", lines["remount"], out)
	require.Equal(t, "readonly", lines["usr"], out)
	_, err := os.Stat("/usr/drover-exec-root")
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestRootCannotEscape runs, as root (which keeps sys_chroot), a program
// that escapes any plain chroot: the task's root is its own mount
// namespace's root, with the host's detached, so there is nothing to climb
// back to.
func TestRootCannotEscape(t *testing.T) {
	d := needRoot(t)
	secret := filepath.Join(t.TempDir(), "host-only")
	require.NoError(t, os.WriteFile(secret, []byte("x"), 0o644))
	cfg := newTask(t, "/local/escape", escapeArg, secret)
	cfg.User = "root"
	self, err := os.Executable()
	require.NoError(t, err)
	bin, err := os.ReadFile(self)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(cfg.TaskDir, "local"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cfg.TaskDir, "local", "escape"), bin, 0o755))
	start(t, d, cfg)
	res := wait(t, d, cfg.ID, 30*time.Second)
	out, stderr := readFile(t, cfg.StdoutPath), readFile(t, cfg.StderrPath)
	require.True(t, res.Successful(), "%s\n%s%s", res, out, stderr)
	if strings.Contains(stderr, "confining the task with chroot instead") {
		t.Skipf("SKIPPED: pivot_root is not possible on this host (%s); the task is only chrooted", strings.TrimSpace(stderr))
	}
	require.Equal(t, "escape=contained\n", out, stderr)
}

// An alloc exec into a task the driver does not know fails and runs
// nothing.
func TestExecTaskUnknownTask(t *testing.T) {
	d := New(nil)
	var out bytes.Buffer
	res, err := d.ExecTask(context.Background(), "any", &drivers.ExecOptions{Command: []string{"/bin/true"}, Stdout: &out, Stderr: &out})
	if !errors.Is(err, drivers.ErrTaskNotFound) && !errors.Is(err, drivers.ErrExecNotSupported) {
		t.Fatalf("ExecTask error = %v, want ErrTaskNotFound (or ErrExecNotSupported where exec tasks cannot run)", err)
	}
	if res != nil || out.Len() != 0 {
		t.Fatalf("ExecTask ran something: result %v, output %q", res, out.String())
	}
}
