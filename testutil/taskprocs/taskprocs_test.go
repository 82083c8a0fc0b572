package taskprocs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers/rawexec"
)

// TestMain makes the test binary a stand-in executor: with os.Args[1] ==
// "__drover_executor" it starts a task in its own process group (which
// forks a child of its own) and waits, as the real executor does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == rawexec.ExecutorArg {
		task := exec.Command("/bin/sh", "-c", "sleep 600 & wait")
		task.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := task.Start(); err != nil {
			os.Exit(2)
		}
		_ = task.Wait()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestSelectTrees(t *testing.T) {
	const self = 100
	exe := func(pid int, path string) procInfo {
		return procInfo{pid: pid, ppid: self, pgid: pid, sid: pid, argv: []string{"/bin/drover", rawexec.ExecutorArg, path}}
	}
	cases := []struct {
		name  string
		procs []procInfo
		dir   string
		want  []int
	}{
		{"executor under dir with task and its child", []procInfo{
			exe(10, "/tmp/run/data/alloc/.private/a/t/executor.json"),
			{pid: 11, ppid: 10, pgid: 11, sid: 10, argv: []string{"sleep", "600"}},
			{pid: 12, ppid: 11, pgid: 11, sid: 10, argv: []string{"sleep", "1"}},
		}, "/tmp/run", []int{10, 11, 12}},
		{"a reparented member of the executor's session", []procInfo{
			exe(10, "/tmp/run/x"),
			{pid: 13, ppid: 1, pgid: 13, sid: 10, argv: []string{"orphan"}},
		}, "/tmp/run/", []int{10, 13}},
		{"a reparented member of the task's process group", []procInfo{
			exe(10, "/tmp/run/x"),
			{pid: 11, ppid: 10, pgid: 11, sid: 10},
			{pid: 14, ppid: 1, pgid: 11, sid: 14},
		}, "/tmp/run", []int{10, 11, 14}},
		{"executor of another directory with a shared prefix", []procInfo{
			exe(10, "/tmp/run2/x"),
			{pid: 11, ppid: 10, pgid: 11, sid: 10},
		}, "/tmp/run", nil},
		{"not an executor although it names the directory", []procInfo{
			{pid: 10, ppid: 1, pgid: 10, sid: 10, argv: []string{"/bin/drover", "agent", "-data-dir", "/tmp/run"}},
			{pid: 11, ppid: 10, pgid: 10, sid: 10},
		}, "/tmp/run", nil},
		{"zombies and self are left out", []procInfo{
			exe(10, "/tmp/run/x"),
			{pid: 11, ppid: 10, pgid: 11, sid: 10, zombie: true},
			{pid: self, ppid: 10, pgid: 10, sid: 10},
		}, "/tmp/run", []int{10}},
		{"a dead executor's orphans are still found by session", []procInfo{
			exe(10, "/tmp/run/x"),
			{pid: 20, ppid: self, pgid: 20, sid: 20, argv: []string{"/bin/drover", rawexec.ExecutorArg, "/elsewhere/x"}},
			{pid: 21, ppid: 1, pgid: 21, sid: 20},
		}, "/tmp/run", []int{10}},
		{"the root directory selects nothing", []procInfo{exe(10, "/tmp/run/x")}, "/", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, p := range selectTrees(tc.procs, tc.dir, self) {
				got = append(got, p.PID)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseStat(t *testing.T) {
	p, ok := parseStat(42, "42 (a (weird) name) S 7 42 40 0 -1 4194560 100 0 0 0")
	require.True(t, ok)
	require.Equal(t, procInfo{pid: 42, ppid: 7, pgid: 42, sid: 40}, p)
	p, ok = parseStat(43, "43 (z) Z 7 43 43 0")
	require.True(t, ok)
	require.True(t, p.zombie)
	_, ok = parseStat(44, "44 no parenthesis")
	require.False(t, ok)
}

// A real executor stand-in under dir, with its task and the task's child:
// Find lists all three (and nothing for another directory), Kill ends them
// and leaves Find empty.
func TestFindAndKill(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self, rawexec.ExecutorArg, filepath.Join(dir, "alloc", ".private", "a", "t", "executor.json"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	require.NoError(t, cmd.Start())
	reaped := make(chan struct{})
	go func() { _ = cmd.Wait(); close(reaped) }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-reaped })

	var found []Process
	require.Eventually(t, func() bool { found = Find(dir); return len(found) == 3 }, 10*time.Second, 10*time.Millisecond,
		"executor, sh, sleep (and nothing else) under %s: %v", dir, &found)
	require.True(t, found[0].Executor)
	require.Equal(t, cmd.Process.Pid, found[0].PID)
	require.Empty(t, Find(t.TempDir()), "another directory")

	killed, err := Kill(dir)
	require.NoError(t, err)
	require.Len(t, killed, len(found))
	require.Empty(t, Find(dir))
	select {
	case <-reaped:
	case <-time.After(10 * time.Second):
		t.Fatal("the executor was not killed")
	}
	for _, p := range found[1:] {
		require.False(t, Alive(p.PID), "%v is gone (or a zombie)", p)
	}
}

// startStandIn starts a stand-in executor (see TestMain) whose command line
// names a path under dir, with DROVER_TEST_RUN=run in its environment; it
// is reaped when it dies (the returned channel closes).
func startStandIn(t *testing.T, dir, run string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self, rawexec.ExecutorArg, filepath.Join(dir, run, "executor.json"))
	cmd.Env = append(os.Environ(), "DROVER_TEST_RUN="+run)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	require.NoError(t, cmd.Start())
	reaped := make(chan struct{})
	go func() { _ = cmd.Wait(); close(reaped) }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-reaped })
	return cmd, reaped
}

// scripts/check-leftovers.sh, which `make test` runs last, fails naming an
// executor of its run with its command line and its task, and kills it; an
// executor of another run does not count, and with none of its run left it
// passes.
func TestCheckLeftoversScript(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "check-leftovers.sh"))
	require.NoError(t, err)
	dir := t.TempDir()
	Cleanup(t, dir)
	run := fmt.Sprintf("taskprocs-test-%d", time.Now().UnixNano())
	ours, oursReaped := startStandIn(t, dir, run)
	other, _ := startStandIn(t, dir, run+"-other")
	var found []Process
	require.Eventually(t, func() bool { found = Find(dir); return len(found) == 6 }, 10*time.Second, 10*time.Millisecond,
		"two stand-ins with their tasks: %v", &found)

	check := func() (int, string) {
		cmd := exec.Command(script)
		cmd.Env = append(os.Environ(), "DROVER_TEST_RUN="+run, "DROVER_LEFTOVER_GRACE=0")
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		require.NoError(t, err, "%s", out)
		return 0, string(out)
	}
	code, out := check()
	require.Equal(t, 1, code, out)
	require.Contains(t, out, fmt.Sprintf("executor pid %d: %s %s %s", ours.Process.Pid, ours.Path, rawexec.ExecutorArg, ours.Args[2]))
	require.Contains(t, out, "task pid", "its task is named too")
	require.Contains(t, out, "sleep 600")
	require.NotContains(t, out, fmt.Sprintf("pid %d:", other.Process.Pid), "another run's executor")
	select {
	case <-oursReaped:
	case <-time.After(10 * time.Second):
		t.Fatal("the script did not kill the leftover executor")
	}
	require.True(t, Alive(other.Process.Pid), "another run's executor is left alone")

	code, out = check()
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "no task executor of this run")
}
