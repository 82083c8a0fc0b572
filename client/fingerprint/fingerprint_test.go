package fingerprint

import (
	"context"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/version"
)

func TestReadCPU(t *testing.T) {
	c, err := ReadCPU("testdata/x86")
	require.NoError(t, err)
	require.Equal(t, 4, c.Cores)
	require.InDelta(t, 2500, c.MHz, 0.001)
	require.Equal(t, int64(10000), c.TotalMHz())
	require.Equal(t, "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz", c.ModelName)

	c, err = ReadCPU("testdata/nomhz")
	require.NoError(t, err)
	require.Equal(t, CPU{Cores: 2}, c)
	require.Equal(t, int64(2000), c.TotalMHz(), "1000 MHz per core when unknown")

	_, err = ReadCPU(t.TempDir())
	require.Error(t, err)
}

func TestReadMeminfo(t *testing.T) {
	m, err := ReadMeminfo("testdata/x86")
	require.NoError(t, err)
	require.Equal(t, Meminfo{Total: 8048576 * 1024, Free: 1048576 * 1024, Available: 4194304 * 1024}, m)
	require.Equal(t, uint64((8048576-4194304)*1024), m.Used())

	m, err = ReadMeminfo("testdata/nomhz")
	require.NoError(t, err)
	require.Equal(t, uint64((524288+262144+262144)*1024), m.Available, "old kernels: free+buffers+cached")
}

func TestReadCPUTimesAndUptime(t *testing.T) {
	ts, err := ReadCPUTimes("testdata/x86")
	require.NoError(t, err)
	require.Len(t, ts, 3)
	require.Equal(t, "cpu", ts[0].Name)
	require.Equal(t, CPUTimes{Name: "cpu1", User: 500, Nice: 5, System: 250, Idle: 4000, IOWait: 50, SoftIRQ: 10}, ts[2])
	require.Equal(t, uint64(9630), ts[0].Total())

	up, err := ReadUptime("testdata/x86")
	require.NoError(t, err)
	require.Equal(t, uint64(12345), up)
}

func TestReadOSReleaseAndKernel(t *testing.T) {
	r, err := ReadOSRelease("testdata/x86")
	require.NoError(t, err)
	require.Equal(t, OSRelease{ID: "ubuntu", VersionID: "24.04"}, r)

	r, err = ReadOSRelease("testdata/nomhz")
	require.NoError(t, err, "falls back to /usr/lib/os-release")
	require.Equal(t, OSRelease{ID: "alpine", VersionID: "3.20.3"}, r)

	k, err := ReadKernelRelease("testdata/x86")
	require.NoError(t, err)
	require.Equal(t, "6.8.0-45-generic", k)
}

func TestHost_FromFixture(t *testing.T) {
	dir := t.TempDir()
	h, err := Host(HostConfig{Root: "testdata/x86", DataDir: dir, Servers: []string{"127.0.0.1:4646"}})
	require.NoError(t, err)
	require.Equal(t, structs.NodeCpuResources{CpuShares: 10000, TotalCpuCores: 4}, h.Resources.Cpu)
	require.Equal(t, int64(8048576/1024), h.Resources.Memory.MemoryMB)
	require.Positive(t, h.Resources.Disk.DiskMB)

	a := h.Attributes
	require.Equal(t, runtime.GOOS, a["kernel.name"])
	require.Equal(t, "6.8.0-45-generic", a["kernel.version"])
	require.Equal(t, "ubuntu", a["os.name"])
	require.Equal(t, "24.04", a["os.version"])
	require.Equal(t, runtime.GOARCH, a["cpu.arch"])
	require.Equal(t, "4", a["cpu.numcores"])
	require.Equal(t, "10000", a["cpu.totalcompute"])
	require.Equal(t, "2500", a["cpu.frequency"])
	require.Equal(t, "8241741824", a["memory.totalbytes"])
	require.NotEmpty(t, a["unique.hostname"])
	require.Equal(t, "127.0.0.1", a["unique.network.ip-address"])
	require.Equal(t, "2.0.5", a["nomad.version"], "the Nomad release whose API Drover implements")
	require.Equal(t, version.Version, a["drover.version"])
	require.Equal(t, dir, a["unique.storage.volume"])
}

func TestHost_MissingSourcesAreSkipped(t *testing.T) {
	h, err := Host(HostConfig{Root: t.TempDir()})
	require.Error(t, err)
	require.NotNil(t, h)
	require.Equal(t, runtime.GOOS, h.Attributes["kernel.name"])
	require.Equal(t, uint16(runtime.NumCPU()), h.Resources.Cpu.TotalCpuCores, "cores fall back to the Go runtime")
	require.NotContains(t, h.Attributes, "os.name")
	require.Equal(t, "127.0.0.1", h.Attributes["unique.network.ip-address"], "no server: loopback")
}

func TestLocalIP(t *testing.T) {
	require.Equal(t, "127.0.0.1", LocalIP(""))
	require.Equal(t, "127.0.0.1", LocalIP("127.0.0.1:4646"))
	require.Equal(t, "127.0.0.1", LocalIP("http://localhost:4646"))
	require.Equal(t, "127.0.0.1", LocalIP("127.0.0.1"), "a missing port is tolerated")
	// A routable address gives some non-loopback local IP when the host has
	// a default route; either way the result is a valid IP.
	require.NotNil(t, net.ParseIP(LocalIP("192.0.2.1:4646")))
}

func TestDiskUsage_MissingPathUsesParent(t *testing.T) {
	d, err := DiskUsage(t.TempDir() + "/not/yet/created")
	require.NoError(t, err)
	require.Positive(t, d.Size)
	require.LessOrEqual(t, d.Available, d.Size)
}

func TestDriversAndAttributes(t *testing.T) {
	healthy := mock.New(nil)
	disabled := mock.New(nil)
	require.NoError(t, disabled.SetConfig(map[string]any{"enabled": false}))
	now := time.Unix(1700000000, 0)
	cat := drivers.Catalog{"mock": healthy, "other": renamed{disabled, "other"}}

	drv := Drivers(context.Background(), cat, now)
	require.Len(t, drv, 2)
	require.True(t, drv["mock"].Healthy)
	require.True(t, drv["mock"].Detected)
	require.Equal(t, "Healthy", drv["mock"].HealthDescription)
	require.Equal(t, now, drv["mock"].UpdateTime)
	require.False(t, drv["other"].Healthy)

	host := map[string]string{"kernel.name": "linux", "driver.other": "1"}
	attrs := MergeAttributes(host, drv)
	require.Equal(t, "1", attrs["driver.mock"])
	require.NotContains(t, attrs, "driver.other", "an unhealthy driver is not advertised")
	require.Equal(t, "linux", attrs["kernel.name"])
	require.Equal(t, "1", host["driver.other"], "the input is not modified")

	later := Drivers(context.Background(), cat, now.Add(time.Minute))
	require.False(t, DriversChanged(drv, later), "only UpdateTime differs")
	require.NoError(t, healthy.SetConfig(map[string]any{"enabled": false}))
	require.True(t, DriversChanged(drv, Drivers(context.Background(), cat, now)))
	require.True(t, DriversChanged(drv, map[string]*structs.DriverInfo{"mock": drv["mock"]}))
}

// renamed gives a driver another name, to put two mock drivers in one catalog.
type renamed struct {
	drivers.Driver
	name string
}

func (r renamed) Name() string { return r.name }
