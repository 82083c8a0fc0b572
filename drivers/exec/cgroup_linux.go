//go:build linux

package exec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroupV2Usable reports whether tasks can get their own cgroup v2 with the
// memory and cpu controllers: the unified hierarchy is mounted at cgroupRoot,
// offers both, and the parent cgroup can be created and can enable them for
// its children. The error says why not.
func cgroupV2Usable() error {
	b, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("no cgroup v2 hierarchy at %s", cgroupRoot)
	}
	have := strings.Fields(string(b))
	for _, c := range []string{"memory", "cpu"} {
		if !contains(have, c) {
			return fmt.Errorf("cgroup v2 at %s lacks the %s controller", cgroupRoot, c)
		}
	}
	if err := enableControllers(cgroupRoot); err != nil {
		return err
	}
	parent := filepath.Join(cgroupRoot, cgroupParent)
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating cgroup %s: %w", parent, err)
	}
	return enableControllers(parent)
}

func enableControllers(dir string) error {
	f := filepath.Join(dir, "cgroup.subtree_control")
	b, err := os.ReadFile(f)
	if err == nil {
		on := strings.Fields(string(b))
		if contains(on, "memory") && contains(on, "cpu") {
			return nil
		}
	}
	if err := os.WriteFile(f, []byte("+memory +cpu"), 0o644); err != nil {
		return fmt.Errorf("enabling memory and cpu in %s: %w", f, err)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// create makes the cgroup and writes its limits; it returns the open cgroup
// dir, for starting a process straight into it.
func (cg *cgroupSpec) create() (*os.File, error) {
	if err := os.Mkdir(cg.Path, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("creating cgroup: %w", err)
	}
	write := func(file, v string) error {
		if err := os.WriteFile(filepath.Join(cg.Path, file), []byte(v), 0o644); err != nil {
			return fmt.Errorf("cgroup %s = %s: %w", file, v, err)
		}
		return nil
	}
	var errs []error
	if cg.MemoryMax > 0 {
		errs = append(errs, write("memory.max", strconv.FormatInt(cg.MemoryMax, 10)))
		// Without this the task would swap past its limit instead of being
		// OOM killed; not every kernel has swap accounting.
		if _, err := os.Stat(filepath.Join(cg.Path, "memory.swap.max")); err == nil {
			errs = append(errs, write("memory.swap.max", "0"))
		}
	}
	if cg.MemoryLow > 0 {
		errs = append(errs, write("memory.low", strconv.FormatInt(cg.MemoryLow, 10)))
	}
	if cg.CPUWeight > 0 {
		errs = append(errs, write("cpu.weight", strconv.Itoa(cg.CPUWeight)))
	}
	if err := errors.Join(errs...); err != nil {
		cg.remove()
		return nil, err
	}
	f, err := os.Open(cg.Path)
	if err != nil {
		cg.remove()
		return nil, err
	}
	return f, nil
}

// oomKilled reports whether the kernel OOM-killed a process of the cgroup.
func (cg *cgroupSpec) oomKilled() bool {
	b, err := os.ReadFile(filepath.Join(cg.Path, "memory.events"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "oom_kill" && f[1] != "0" {
			return true
		}
	}
	return false
}

// remove deletes the cgroup once its processes are gone (they may take a
// moment to be reaped after the namespace's init exits).
func (cg *cgroupSpec) remove() {
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := os.Remove(cg.Path)
		if err == nil || errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			return
		}
		if b, rerr := os.ReadFile(filepath.Join(cg.Path, "cgroup.procs")); rerr == nil {
			for _, pid := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(pid); err == nil {
					_ = killPID(n)
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}
