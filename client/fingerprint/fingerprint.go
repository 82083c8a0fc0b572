package fingerprint

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/version"
)

// Node attribute names set by Host.
const (
	AttrKernelName     = "kernel.name"
	AttrKernelVersion  = "kernel.version"
	AttrOSName         = "os.name"
	AttrOSVersion      = "os.version"
	AttrCPUArch        = "cpu.arch"
	AttrCPUNumCores    = "cpu.numcores"
	AttrCPUTotal       = "cpu.totalcompute"
	AttrCPUFrequency   = "cpu.frequency"
	AttrCPUModel       = "cpu.modelname"
	AttrMemoryTotal    = "memory.totalbytes"
	AttrHostname       = "unique.hostname"
	AttrIPAddress      = "unique.network.ip-address"
	AttrStorageTotal   = "unique.storage.bytestotal"
	AttrStorageFree    = "unique.storage.bytesfree"
	AttrStorageVolume  = "unique.storage.volume"
	AttrNomadVersion   = "nomad.version"
	AttrDroverVersion  = "drover.version"
	AttrDriverPrefix   = "driver."
	loopbackIPAddress  = "127.0.0.1"
	bytesPerMegabyte   = 1024 * 1024
	fallbackServerPort = "4646"
)

// HostConfig says where to look.
type HostConfig struct {
	Root    string   // filesystem root of /proc and /etc; "" means "/"
	DataDir string   // the client's data dir; its filesystem is the node's disk
	Servers []string // server addresses "host:port"; the first picks the node IP
}

// HostInfo is the host part of a node's fingerprint.
type HostInfo struct {
	Attributes map[string]string
	Resources  structs.NodeResources
}

// Host fingerprints CPU, memory, disk, kernel, OS and network. A missing
// source is skipped (its attributes are left out) rather than failing the
// whole fingerprint; the error lists what was skipped, and HostInfo is
// always usable.
func Host(cfg HostConfig) (*HostInfo, error) {
	root := cfg.Root
	if root == "" {
		root = "/"
	}
	h := &HostInfo{Attributes: map[string]string{
		AttrKernelName:    runtime.GOOS,
		AttrCPUArch:       runtime.GOARCH,
		AttrNomadVersion:  version.NomadAPIVersion,
		AttrDroverVersion: version.Version,
	}}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(h.cpu(root))
	add(h.memory(root))
	add(h.disk(cfg.DataDir))
	if rel, err := ReadKernelRelease(root); err == nil {
		h.Attributes[AttrKernelVersion] = rel
	} else if rel := unameRelease(); rel != "" && root == "/" {
		h.Attributes[AttrKernelVersion] = rel
	} else {
		add(err)
	}
	if osr, err := ReadOSRelease(root); err == nil {
		setIf(h.Attributes, AttrOSName, osr.ID)
		setIf(h.Attributes, AttrOSVersion, osr.VersionID)
	} else {
		add(err)
	}
	if name, err := os.Hostname(); err == nil {
		h.Attributes[AttrHostname] = name
	} else {
		add(fmt.Errorf("fingerprint: hostname: %w", err))
	}
	h.Attributes[AttrIPAddress] = LocalIP(firstServer(cfg.Servers))
	return h, errors.Join(errs...)
}

func setIf(m map[string]string, k, v string) {
	if v != "" {
		m[k] = v
	}
}

func firstServer(servers []string) string {
	if len(servers) == 0 {
		return ""
	}
	return servers[0]
}

func (h *HostInfo) cpu(root string) error {
	c, err := ReadCPU(root)
	if c.Cores == 0 {
		c.Cores = runtime.NumCPU()
	}
	total := c.TotalMHz()
	h.Resources.Cpu = structs.NodeCpuResources{CpuShares: total, TotalCpuCores: uint16(c.Cores)}
	h.Attributes[AttrCPUNumCores] = strconv.Itoa(c.Cores)
	h.Attributes[AttrCPUTotal] = strconv.FormatInt(total, 10)
	if c.MHz > 0 {
		h.Attributes[AttrCPUFrequency] = strconv.Itoa(int(c.MHz))
	}
	setIf(h.Attributes, AttrCPUModel, c.ModelName)
	return err
}

func (h *HostInfo) memory(root string) error {
	m, err := ReadMeminfo(root)
	if err != nil {
		return err
	}
	h.Resources.Memory.MemoryMB = int64(m.Total / bytesPerMegabyte)
	h.Attributes[AttrMemoryTotal] = strconv.FormatUint(m.Total, 10)
	return nil
}

func (h *HostInfo) disk(dataDir string) error {
	if dataDir == "" {
		return nil
	}
	d, err := DiskUsage(dataDir)
	if err != nil {
		return err
	}
	h.Resources.Disk.DiskMB = int64(d.Available / bytesPerMegabyte)
	h.Attributes[AttrStorageTotal] = strconv.FormatUint(d.Size, 10)
	h.Attributes[AttrStorageFree] = strconv.FormatUint(d.Available, 10)
	h.Attributes[AttrStorageVolume] = dataDir
	return nil
}

// Disk is the usage of the filesystem holding a path, in bytes.
type Disk struct {
	Size      uint64
	Used      uint64
	Available uint64 // to unprivileged users
}

// DiskUsage statfs's path (the nearest existing parent when path does not
// exist yet).
func DiskUsage(path string) (Disk, error) {
	p := path
	for {
		if _, err := os.Stat(p); err == nil || p == "/" || p == "." {
			break
		}
		p = parentDir(p)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(p, &st); err != nil {
		return Disk{}, fmt.Errorf("fingerprint: statfs %s: %w", path, err)
	}
	bs := uint64(st.Bsize)
	d := Disk{Size: st.Blocks * bs, Available: st.Bavail * bs}
	if free := st.Bfree * bs; d.Size >= free {
		d.Used = d.Size - free
	}
	return d, nil
}

func parentDir(p string) string {
	p = strings.TrimRight(p, "/")
	i := strings.LastIndex(p, "/")
	switch {
	case i < 0:
		return "."
	case i == 0:
		return "/"
	}
	return p[:i]
}

func unameRelease() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return ""
	}
	b := make([]byte, 0, len(u.Release))
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// LocalIP returns the local address the kernel routes to server ("host:port"
// or "http://host:port"): a UDP "dial" sends nothing and just picks the
// route. It returns 127.0.0.1 when server is empty or unroutable.
func LocalIP(server string) string {
	server = strings.TrimPrefix(strings.TrimPrefix(server, "http://"), "https://")
	server = strings.TrimSuffix(server, "/")
	if server == "" {
		return loopbackIPAddress
	}
	if _, _, err := net.SplitHostPort(server); err != nil {
		server = net.JoinHostPort(server, fallbackServerPort)
	}
	conn, err := net.Dial("udp", server)
	if err != nil {
		return loopbackIPAddress
	}
	defer conn.Close()
	if ua, ok := conn.LocalAddr().(*net.UDPAddr); ok && ua.IP != nil && !ua.IP.IsUnspecified() {
		return ua.IP.String()
	}
	return loopbackIPAddress
}

// Drivers asks each driver of the catalog for its fingerprint. now stamps
// UpdateTime.
func Drivers(ctx context.Context, catalog drivers.Catalog, now time.Time) map[string]*structs.DriverInfo {
	out := make(map[string]*structs.DriverInfo, len(catalog))
	for _, name := range catalog.Names() {
		fp := catalog[name].Fingerprint(ctx)
		if fp == nil {
			fp = &drivers.Fingerprint{HealthDescription: "no fingerprint"}
		}
		out[name] = &structs.DriverInfo{
			Attributes:        maps.Clone(fp.Attributes),
			Detected:          fp.Detected,
			Healthy:           fp.Healthy,
			HealthDescription: fp.HealthDescription,
			UpdateTime:        now,
		}
		if out[name].Attributes == nil {
			out[name].Attributes = map[string]string{}
		}
	}
	return out
}

// MergeAttributes returns the node attributes: the host's, each detected
// driver's own attributes, and driver.<name> = "1" for each healthy driver
// (an unhealthy driver's driver.<name> is left out so constraints on it
// fail). Neither input is modified.
func MergeAttributes(host map[string]string, drv map[string]*structs.DriverInfo) map[string]string {
	out := maps.Clone(host)
	if out == nil {
		out = map[string]string{}
	}
	for name, info := range drv {
		if info == nil || !info.Detected {
			continue
		}
		for k, v := range info.Attributes {
			out[k] = v
		}
		key := AttrDriverPrefix + name
		if info.Healthy {
			out[key] = "1"
		} else {
			delete(out, key)
		}
	}
	return out
}

// DriversChanged reports whether the two driver fingerprints differ in
// anything but UpdateTime.
func DriversChanged(old, cur map[string]*structs.DriverInfo) bool {
	if len(old) != len(cur) {
		return true
	}
	for name, o := range old {
		c, ok := cur[name]
		if !ok || (o == nil) != (c == nil) {
			return true
		}
		if o == nil {
			continue
		}
		if o.Detected != c.Detected || o.Healthy != c.Healthy || o.HealthDescription != c.HealthDescription ||
			!maps.Equal(o.Attributes, c.Attributes) {
			return true
		}
	}
	return false
}
