//go:build linux

package exec

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
)

// needExec skips, loudly, a test that execs into exec tasks where that
// cannot work (not root, no namespaces, no nsenter or setpriv).
func needExec(t *testing.T) *Driver {
	t.Helper()
	d := needRoot(t)
	if _, err := os.Stat(nsenterPath); err != nil {
		t.Skipf("SKIPPED: alloc exec into exec tasks needs util-linux nsenter on the host: %v", err)
	}
	found := false
	for _, p := range setprivPaths {
		if checkExecutable(p) == nil {
			found = true
		}
	}
	if !found {
		t.Skipf("SKIPPED: alloc exec into exec tasks needs util-linux setpriv (%v)", setprivPaths)
	}
	return d
}

// sleeper starts an exec task that sleeps, as user, and waits until it
// runs.
func sleeper(t *testing.T, d *Driver, user string) *drivers.TaskConfig {
	t.Helper()
	cfg := newTask(t, "/bin/sleep", "600")
	cfg.User = user
	start(t, d, cfg)
	return cfg
}

// execIn runs command in task id and returns its exit code and output.
func execIn(t *testing.T, d *Driver, id string, stdin string, command ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	opts := &drivers.ExecOptions{Command: command, Stdout: &stdout, Stderr: &stderr}
	if stdin != "" {
		opts.Stdin = strings.NewReader(stdin)
	}
	res, err := d.ExecTask(ctx, id, opts)
	require.NoError(t, err)
	require.NoError(t, res.Err)
	return res.ExitCode, stdout.String(), stderr.String()
}

// keyValues parses "key=value" lines.
func keyValues(out string) map[string]string {
	kv := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(l, "=")
		kv[k] = v
	}
	return kv
}

// TestExecSeesTheTask: an exec'd command runs in the task's root, PID,
// mount, IPC and UTS namespaces, as the task's user, with the task's
// environment; its exit code comes back.
func TestExecSeesTheTask(t *testing.T) {
	d := needExec(t)
	secret := filepath.Join(t.TempDir(), "host-only")
	require.NoError(t, os.WriteFile(secret, []byte("x"), 0o644))
	cfg := sleeper(t, d, "")
	require.NoError(t, os.WriteFile(filepath.Join(cfg.TaskDir, "local", "marker"), []byte("task-root\n"), 0o644))
	info, err := d.Task(cfg.ID)
	require.NoError(t, err)
	pid := info.State.TaskPID
	nsOf := func(ns string) string {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
		require.NoError(t, err)
		return l
	}
	script := strings.Join([]string{
		`echo "marker=$(cat /local/marker)"`,
		fmt.Sprintf(`if [ -e %s ]; then echo host=visible; else echo host=hidden; fi`, secret),
		`echo "uid=$(id -u)"`,
		`echo "pid1=$(tr '\0' ' ' < /proc/1/cmdline)"`,
		`echo "mnt=$(readlink /proc/self/ns/mnt)"`,
		`echo "pidns=$(readlink /proc/self/ns/pid)"`,
		`echo "ipc=$(readlink /proc/self/ns/ipc)"`,
		`echo "uts=$(readlink /proc/self/ns/uts)"`,
		`echo "taskdir=$NOMAD_TASK_DIR"`,
		`echo "pwd=$(pwd)"`,
		`echo "capbnd=$(grep CapBnd /proc/self/status | cut -f2)"`,
		`echo "capeff=$(grep CapEff /proc/self/status | cut -f2)"`,
		`exit 7`,
	}, "; ")
	code, out, stderr := execIn(t, d, cfg.ID, "", "/bin/sh", "-c", script)
	require.Equal(t, 7, code, "%s%s", out, stderr)
	kv := keyValues(out)
	require.Equal(t, "task-root", kv["marker"], out)
	require.Equal(t, "hidden", kv["host"], out)
	require.Equal(t, "65534", kv["uid"], "the task's user (nobody): %s", out)
	require.Contains(t, kv["pid1"], initArg, "PID 1 is the task's init: %s", out)
	require.Equal(t, nsOf("mnt"), kv["mnt"])
	require.Equal(t, nsOf("pid"), kv["pidns"])
	require.Equal(t, nsOf("ipc"), kv["ipc"])
	require.Equal(t, nsOf("uts"), kv["uts"])
	require.Equal(t, "/local", kv["taskdir"], "the task's environment, as the task sees it")
	require.Equal(t, "/", kv["pwd"])
	require.Equal(t, fmt.Sprintf("%016x", taskCapMask()), kv["capbnd"], out)
	require.Equal(t, "0000000000000000", kv["capeff"], "a non-root user has no capabilities: %s", out)

	code, out, _ = execIn(t, d, cfg.ID, "hello from stdin\n", "cat")
	require.Equal(t, 0, code)
	require.Equal(t, "hello from stdin\n", out, "stdin reaches the command; bare names are looked up in the task's root")
	code, _, _ = execIn(t, d, cfg.ID, "", "/no/such/command")
	require.Equal(t, 127, code)
}

// TestExecAsRootCannotRemount: exec'd into a task run as root, a command
// keeps only the task's capability set: it cannot mount or make its
// read-only binds writable.
func TestExecAsRootCannotRemount(t *testing.T) {
	d := needExec(t)
	cfg := sleeper(t, d, "root")
	script := strings.Join([]string{
		`echo "uid=$(id -u)"`,
		`echo "capeff=$(grep CapEff /proc/self/status | cut -f2)"`,
		`if mount -o remount,rw /usr 2>/dev/null; then echo remount=allowed; else echo remount=denied; fi`,
		`if mount -t tmpfs none /tmp 2>/dev/null; then echo mount=allowed; else echo mount=denied; fi`,
		`if touch /usr/drover-exec-in 2>/dev/null; then echo usr=writable; else echo usr=readonly; fi`,
	}, "; ")
	t.Cleanup(func() { _ = os.Remove("/usr/drover-exec-in") }) // only there if the test fails
	code, out, stderr := execIn(t, d, cfg.ID, "", "/bin/sh", "-c", script)
	require.Equal(t, 0, code, "%s%s", out, stderr)
	kv := keyValues(out)
	require.Equal(t, "0", kv["uid"], out)
	require.Equal(t, fmt.Sprintf("%016x", taskCapMask()), kv["capeff"], out)
	require.Equal(t, "denied", kv["remount"], out)
	require.Equal(t, "denied", kv["mount"], out)
	require.Equal(t, "readonly", kv["usr"], out)
}

// TestExecTTY: with a terminal, the command's stdin is a terminal, its
// output comes back and so does its exit code.
func TestExecTTY(t *testing.T) {
	d := needExec(t)
	cfg := sleeper(t, d, "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	resize := make(chan drivers.TerminalSize, 1)
	resize <- drivers.TerminalSize{Width: 100, Height: 40}
	res, err := d.ExecTask(ctx, cfg.ID, &drivers.ExecOptions{
		Command: []string{"/bin/sh", "-c", `sleep 0.2; if [ -t 0 ]; then echo tty=yes; else echo tty=no; fi; echo "size=$(stty size)"; exit 3`},
		Tty:     true, Stdout: &out, Resize: resize,
	})
	require.NoError(t, err)
	require.Equal(t, 3, res.ExitCode, out.String())
	kv := keyValues(strings.ReplaceAll(out.String(), "\r", ""))
	require.Equal(t, "yes", kv["tty"], out.String())
	require.Equal(t, "40 100", kv["size"], out.String())
}

// TestExecCanceled: ending the context kills the exec'd command, inside
// the task's PID namespace included.
func TestExecCanceled(t *testing.T) {
	d := needExec(t)
	cfg := sleeper(t, d, "")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	began := time.Now()
	res, err := d.ExecTask(ctx, cfg.ID, &drivers.ExecOptions{Command: []string{"/bin/sleep", "60"}})
	require.NoError(t, err)
	require.Less(t, time.Since(began), 10*time.Second)
	require.NotZero(t, res.ExitCode)
	list := `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f"; echo; done`
	code, out, _ := execIn(t, d, cfg.ID, "", "/bin/sh", "-c", list)
	require.Equal(t, 0, code)
	require.Contains(t, out, "/bin/sleep 600 \n", "the task itself is listed")
	require.NotContains(t, out, "/bin/sleep 60 \n", "the canceled command is gone from the task")
}

// TestExecIntoExitedTask fails without running anything.
func TestExecIntoExitedTask(t *testing.T) {
	d := needExec(t)
	cfg := newTask(t, "/bin/true")
	start(t, d, cfg)
	wait(t, d, cfg.ID, 20*time.Second)
	_, err := d.ExecTask(context.Background(), cfg.ID, &drivers.ExecOptions{Command: []string{"/bin/true"}})
	require.ErrorContains(t, err, "has exited")
}

// TestExecHostPIDMode: a task with pid_mode = "host" shares the agent's PID
// namespace, and so does a command exec'd into it (its mounts stay the
// task's).
func TestExecHostPIDMode(t *testing.T) {
	d := needExec(t)
	cfg := newTask(t, "/bin/sleep", "600")
	cfg.Config["pid_mode"] = "host"
	start(t, d, cfg)
	ours, err := os.Readlink("/proc/self/ns/pid")
	require.NoError(t, err)
	code, out, stderr := execIn(t, d, cfg.ID, "", "/bin/sh", "-c", `echo "pidns=$(readlink /proc/self/ns/pid)"; echo "marker=$(ls -d /local)"`)
	require.Equal(t, 0, code, stderr)
	kv := keyValues(out)
	require.Equal(t, ours, kv["pidns"], out)
	require.Equal(t, "/local", kv["marker"], out)
}

// TestExecJoinsTheTaskCgroup: the exec'd command is accounted to the
// task's cgroup.
func TestExecJoinsTheTaskCgroup(t *testing.T) {
	d := needExec(t)
	if err := d.support().cgroupErr; err != nil {
		t.Skipf("SKIPPED: no cgroup v2 for exec tasks on this host: %v", err)
	}
	cfg := sleeper(t, d, "")
	code, out, stderr := execIn(t, d, cfg.ID, "", "cat", "/proc/self/cgroup")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "/"+cgroupParent+"/"+cgroupName(cfg.ID), out)
}
