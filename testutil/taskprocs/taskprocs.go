package taskprocs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/drivers/rawexec"
)

// Process is one process of an executor's tree.
type Process struct {
	PID  int
	PPID int
	PGID int // process group
	SID  int // session
	// Executor is set on the executors themselves (the roots).
	Executor bool
	// Cmdline is the command line, arguments joined by spaces.
	Cmdline string
}

func (p Process) String() string { return fmt.Sprintf("pid %d: %s", p.PID, p.Cmdline) }

// procInfo is one /proc entry as Find reads it.
type procInfo struct {
	pid, ppid, pgid, sid int
	zombie               bool
	argv                 []string
}

// Find returns the executors whose command line names a path under dir, and
// every live process of theirs, executors first, by PID. Zombies are not
// listed: they are dead and wait only for their parent to reap them.
func Find(dir string) []Process {
	return selectTrees(readProcs(), dir, os.Getpid())
}

// KillWait bounds how long Kill waits for the killed processes to go.
const KillWait = 10 * time.Second

// Kill SIGKILLs what Find(dir) returns (whole process groups where one of
// them leads the group), then waits until Find(dir) is empty, bounded by
// KillWait. It returns what it killed; the error names what is still alive.
func Kill(dir string) ([]Process, error) {
	killed := Find(dir)
	if len(killed) == 0 {
		return nil, nil
	}
	leaders := map[int]bool{}
	for _, p := range killed {
		leaders[p.PID] = true
	}
	for _, p := range killed {
		if leaders[p.PGID] {
			_ = syscall.Kill(-p.PGID, syscall.SIGKILL)
		}
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
	deadline := time.Now().Add(KillWait)
	for {
		left := Find(dir)
		if len(left) == 0 {
			return killed, nil
		}
		if time.Now().After(deadline) {
			return killed, fmt.Errorf("taskprocs: %d processes under %s still alive %v after SIGKILL: %v", len(left), dir, KillWait, left)
		}
		// Kill again what appeared meanwhile (a task forking as it died).
		for _, p := range left {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond) // polling /proc: there is no event for another session's exit
	}
}

// Cleanup registers a t.Cleanup that kills the executors under dir and
// their processes (Kill), logging what it killed and failing the test if
// any survives. Register it before the cleanup that stops the client or
// agent (cleanups run last-in first-out), so that it runs after it.
func Cleanup(t testing.TB, dir string) {
	t.Helper()
	t.Cleanup(func() {
		killed, err := Kill(dir)
		if len(killed) > 0 {
			t.Logf("taskprocs: killed %d task processes left under %s: %v", len(killed), dir, killed)
		}
		if err != nil {
			t.Error(err)
		}
	})
}

// Alive reports whether pid is a live process: it exists and is not a
// zombie (a zombie has exited; only its parent's wait is missing, and in a
// container whose init does not reap, that may never come).
func Alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	p, ok := parseStat(pid, string(stat))
	return ok && !p.zombie
}

// selectTrees picks from procs the executors naming a path under dir and
// everything of theirs, never self. It is the pure core of Find.
func selectTrees(procs []procInfo, dir string, self int) []Process {
	dir = filepath.Clean(dir)
	if dir == "" || dir == "." || dir == "/" {
		return nil // a root this wide would match every executor on the host
	}
	prefix := dir + "/"
	chosen := map[int]bool{}
	executor := map[int]bool{}
	for _, p := range procs {
		if p.zombie || p.pid == self || len(p.argv) < 2 || p.argv[1] != rawexec.ExecutorArg {
			continue
		}
		if slices.ContainsFunc(p.argv[2:], func(a string) bool { return strings.HasPrefix(filepath.Clean(a)+"/", prefix) }) {
			chosen[p.pid], executor[p.pid] = true, true
		}
	}
	for grew := len(chosen) > 0; grew; {
		grew = false
		for _, p := range procs {
			if chosen[p.pid] || p.zombie || p.pid == self {
				continue
			}
			if chosen[p.ppid] || executor[p.sid] || (chosen[p.pgid] && p.pgid != 0) {
				chosen[p.pid], grew = true, true
			}
		}
	}
	var out []Process
	for _, p := range procs {
		if chosen[p.pid] {
			out = append(out, Process{PID: p.pid, PPID: p.ppid, PGID: p.pgid, SID: p.sid,
				Executor: executor[p.pid], Cmdline: strings.Join(p.argv, " ")})
		}
	}
	slices.SortFunc(out, func(a, b Process) int {
		if a.Executor != b.Executor {
			if a.Executor {
				return -1
			}
			return 1
		}
		return a.PID - b.PID
	})
	return out
}

// readProcs reads every process's stat and command line from /proc; ones
// that exit while it reads are skipped.
func readProcs() []procInfo {
	entries, _ := os.ReadDir("/proc")
	var out []procInfo
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		p, ok := parseStat(pid, string(stat))
		if !ok {
			continue
		}
		if cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil {
			p.argv = strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		}
		out = append(out, p)
	}
	return out
}

// parseStat reads state, ppid, pgrp and session from a /proc/<pid>/stat
// line. The command name in parentheses may hold spaces and parentheses,
// so fields are counted from the last ')'.
func parseStat(pid int, stat string) (procInfo, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 4 {
		return procInfo{}, false
	}
	p := procInfo{pid: pid, zombie: f[0] == "Z" || f[0] == "X"}
	var err1, err2, err3 error
	p.ppid, err1 = strconv.Atoi(f[1])
	p.pgid, err2 = strconv.Atoi(f[2])
	p.sid, err3 = strconv.Atoi(f[3])
	return p, err1 == nil && err2 == nil && err3 == nil
}
