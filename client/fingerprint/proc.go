package fingerprint

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CPU is what /proc/cpuinfo says about the processors.
type CPU struct {
	Cores     int     // logical processors ("processor" entries)
	MHz       float64 // mean "cpu MHz" over the processors; 0 when unknown
	ModelName string  // first "model name"
}

// TotalMHz is MHz × Cores, or 1000 MHz × Cores when the frequency is
// unknown (virtual machines and ARM boards often do not report it).
func (c CPU) TotalMHz() int64 {
	mhz := c.MHz
	if mhz <= 0 {
		mhz = DefaultCoreMHz
	}
	return int64(mhz * float64(c.Cores))
}

// DefaultCoreMHz is the frequency assumed for a core that reports none.
const DefaultCoreMHz = 1000

// ReadCPU parses <root>/proc/cpuinfo. Cores is at least 1 when the file
// lists no processor (the caller may prefer runtime.NumCPU then).
func ReadCPU(root string) (CPU, error) {
	raw, err := os.ReadFile(filepath.Join(root, "proc", "cpuinfo"))
	if err != nil {
		return CPU{}, fmt.Errorf("fingerprint: reading cpuinfo: %w", err)
	}
	var c CPU
	var mhzSum float64
	var mhzN int
	for _, line := range strings.Split(string(raw), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "processor":
			c.Cores++
		case "cpu MHz":
			if f, err := strconv.ParseFloat(val, 64); err == nil && f > 0 {
				mhzSum += f
				mhzN++
			}
		case "model name":
			if c.ModelName == "" {
				c.ModelName = val
			}
		}
	}
	if mhzN > 0 {
		c.MHz = mhzSum / float64(mhzN)
	}
	return c, nil
}

// Meminfo holds the /proc/meminfo values the client uses, in bytes.
type Meminfo struct {
	Total     uint64
	Free      uint64
	Available uint64 // MemAvailable, or Free+Buffers+Cached on old kernels
}

// Used is Total - Available.
func (m Meminfo) Used() uint64 {
	if m.Available > m.Total {
		return 0
	}
	return m.Total - m.Available
}

// ReadMeminfo parses <root>/proc/meminfo.
func ReadMeminfo(root string) (Meminfo, error) {
	raw, err := os.ReadFile(filepath.Join(root, "proc", "meminfo"))
	if err != nil {
		return Meminfo{}, fmt.Errorf("fingerprint: reading meminfo: %w", err)
	}
	kb := map[string]uint64{}
	for _, line := range strings.Split(string(raw), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(val)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			n *= 1024
		}
		kb[key] = n
	}
	total, ok := kb["MemTotal"]
	if !ok {
		return Meminfo{}, errors.New("fingerprint: meminfo has no MemTotal")
	}
	m := Meminfo{Total: total, Free: kb["MemFree"]}
	if avail, ok := kb["MemAvailable"]; ok {
		m.Available = avail
	} else {
		m.Available = kb["MemFree"] + kb["Buffers"] + kb["Cached"]
	}
	return m, nil
}

// CPUTimes is one line of /proc/stat, in clock ticks.
type CPUTimes struct {
	Name                                                  string // "cpu" (all) or "cpu0", "cpu1", ...
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal uint64
}

// Total is the sum of every counted state.
func (t CPUTimes) Total() uint64 {
	return t.User + t.Nice + t.System + t.Idle + t.IOWait + t.IRQ + t.SoftIRQ + t.Steal
}

// ReadCPUTimes parses the cpu lines of <root>/proc/stat: the aggregate line
// first, then one per CPU.
func ReadCPUTimes(root string) ([]CPUTimes, error) {
	raw, err := os.ReadFile(filepath.Join(root, "proc", "stat"))
	if err != nil {
		return nil, fmt.Errorf("fingerprint: reading stat: %w", err)
	}
	var out []CPUTimes
	for _, line := range strings.Split(string(raw), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 || !strings.HasPrefix(fields[0], "cpu") {
			continue
		}
		t := CPUTimes{Name: fields[0]}
		dst := []*uint64{&t.User, &t.Nice, &t.System, &t.Idle, &t.IOWait, &t.IRQ, &t.SoftIRQ, &t.Steal}
		for i, f := range fields[1:] {
			if i >= len(dst) {
				break
			}
			n, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("fingerprint: stat line %q: %w", fields[0], err)
			}
			*dst[i] = n
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, errors.New("fingerprint: stat has no cpu lines")
	}
	return out, nil
}

// ReadUptime returns the seconds since boot from <root>/proc/uptime.
func ReadUptime(root string) (uint64, error) {
	raw, err := os.ReadFile(filepath.Join(root, "proc", "uptime"))
	if err != nil {
		return 0, fmt.Errorf("fingerprint: reading uptime: %w", err)
	}
	fields := strings.Fields(string(raw))
	if len(fields) == 0 {
		return 0, errors.New("fingerprint: empty uptime")
	}
	f, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return 0, fmt.Errorf("fingerprint: parsing uptime: %w", err)
	}
	return uint64(f), nil
}

// ReadKernelRelease returns the kernel release (uname -r) from
// <root>/proc/sys/kernel/osrelease.
func ReadKernelRelease(root string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(root, "proc", "sys", "kernel", "osrelease"))
	if err != nil {
		return "", fmt.Errorf("fingerprint: reading kernel release: %w", err)
	}
	return strings.TrimSpace(string(raw)), nil
}

// OSRelease is the distribution from os-release(5).
type OSRelease struct {
	ID        string // "ubuntu", "debian", "alpine"
	VersionID string // "24.04"
}

// ReadOSRelease parses <root>/etc/os-release, falling back to
// <root>/usr/lib/os-release.
func ReadOSRelease(root string) (OSRelease, error) {
	var raw []byte
	var err error
	for _, p := range []string{"etc/os-release", "usr/lib/os-release"} {
		raw, err = os.ReadFile(filepath.Join(root, p))
		if err == nil {
			break
		}
	}
	if err != nil {
		return OSRelease{}, fmt.Errorf("fingerprint: reading os-release: %w", err)
	}
	var r OSRelease
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		key, val, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || strings.HasPrefix(key, "#") {
			continue
		}
		val = unquote(val)
		switch key {
		case "ID":
			r.ID = val
		case "VERSION_ID":
			r.VersionID = val
		}
	}
	return r, nil
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		if u, err := strconv.Unquote(`"` + s[1:len(s)-1] + `"`); err == nil && s[0] == '"' {
			return u
		}
		return s[1 : len(s)-1]
	}
	return s
}
