package rawexec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// procStat is what we read from /proc/<pid>/stat.
type procStat struct {
	State     byte   // field 3: R, S, D, Z, X, ...
	StartTime uint64 // field 22: start time in clock ticks after boot
}

// readProcStat parses /proc/<pid>/stat. The command name (field 2) may hold
// spaces and parentheses, so fields are counted from the last ')'.
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(string(b))
}

func parseProcStat(s string) (procStat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("malformed stat: no ')'")
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); field 22 (starttime) is fields[19].
	if len(fields) < 20 || len(fields[0]) != 1 {
		return procStat{}, fmt.Errorf("malformed stat: %d fields after comm", len(fields))
	}
	st, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("malformed stat starttime: %w", err)
	}
	return procStat{State: fields[0][0], StartTime: st}, nil
}

// procStartTime returns the start time of pid, or 0 if it cannot be read.
func procStartTime(pid int) uint64 {
	st, err := readProcStat(pid)
	if err != nil {
		return 0
	}
	return st.StartTime
}

// haveProc reports whether /proc is usable.
var haveProc = func() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}()

// processAlive reports whether pid is a live (not zombie) process whose start
// time is startTime; a zero startTime skips the PID-reuse check.
func processAlive(pid int, startTime uint64) bool {
	if pid <= 0 {
		return false
	}
	if !haveProc {
		err := syscall.Kill(pid, 0)
		return err == nil || errors.Is(err, syscall.EPERM)
	}
	st, err := readProcStat(pid)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ESRCH) {
			// Unreadable for another reason: fall back to kill(0).
			kerr := syscall.Kill(pid, 0)
			return kerr == nil || errors.Is(kerr, syscall.EPERM)
		}
		return false
	}
	if st.State == 'Z' || st.State == 'X' || st.State == 'x' {
		return false
	}
	return startTime == 0 || st.StartTime == startTime
}
