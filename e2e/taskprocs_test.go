package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// killTaskProcesses kills, at the end of a test, the task executors an
// agent left behind and everything they started. Executors outlive their
// client agent on purpose (a restarted client recovers its tasks), so a
// killed agent leaves them running; they are found by the agent's data
// directory in their command line.
func killTaskProcesses(dataDir string) {
	if dataDir == "" {
		return
	}
	parent := map[int]int{}
	var roots []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			// The command name in parentheses may hold spaces: fields
			// start after its closing parenthesis.
			if i := strings.LastIndexByte(string(stat), ')'); i > 0 {
				if f := strings.Fields(string(stat[i+1:])); len(f) > 1 {
					parent[pid], _ = strconv.Atoi(f[1])
				}
			}
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), "__drover_executor") && strings.Contains(string(cmdline), dataDir+"/") {
			roots = append(roots, pid)
		}
	}
	doomed := map[int]bool{}
	for _, r := range roots {
		doomed[r] = true
	}
	for grew := true; grew; {
		grew = false
		for pid, ppid := range parent {
			if doomed[ppid] && !doomed[pid] {
				doomed[pid], grew = true, true
			}
		}
	}
	for pid := range doomed {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
