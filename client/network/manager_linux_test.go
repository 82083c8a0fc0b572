package network

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// testManager returns a Manager on a bridge of the test's own (a unique
// name and a /24 of 10.213.0.0/16), removed with its iptables chains when
// the test ends; it skips when bridge mode cannot work here.
func testManager(t *testing.T) *Manager {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "drvt" + hex.EncodeToString(b)
	m, err := NewManager(Config{
		Bridge:       BridgeConfig{Name: name, Subnet: fmt.Sprintf("10.213.%d.0/24", b[0])},
		StateDir:     t.TempDir(),
		CNIConfigDir: t.TempDir(),
	})
	require.NoError(t, err)
	if ok, why := m.Available(); !ok {
		t.Skipf("bridge networking unavailable: %s", why)
	}
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", name).Run()
		_ = os.RemoveAll("/var/lib/cni/networks/" + name)
	})
	return m
}

func bridgeAlloc(id string, ports ...structs.AllocatedPortMapping) *structs.Allocation {
	return &structs.Allocation{
		ID: id, TaskGroup: "g",
		Job:                &structs.Job{TaskGroups: []*structs.TaskGroup{{Name: "g", Networks: []*structs.NetworkResource{{Mode: "bridge"}}}}},
		AllocatedResources: &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{Ports: ports}},
	}
}

func iptablesSave(t *testing.T) string {
	out, err := exec.Command("iptables-save").CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}

// TestManagerSetupTeardown adds a namespace to a real bridge with the
// reference plugins, reaches a listener in it through its mapped host
// port, then tears it down: no namespace file, veth or iptables rule of
// the allocation remains.
func TestManagerSetupTeardown(t *testing.T) {
	m := testManager(t)
	id := "0a1b2c3d-0000-4000-8000-" + hex.EncodeToString([]byte(t.Name()))[:12]
	hostPort := freePort(t)
	alloc := bridgeAlloc(id, structs.AllocatedPortMapping{Label: "http", Value: hostPort, To: 8080, HostIP: "127.0.0.1"})
	spec, ok := GroupSpec(alloc)
	require.True(t, ok)
	ctx := context.Background()
	st, err := m.Setup(ctx, alloc, spec, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Teardown(ctx, id, nil, nil) })
	require.True(t, isNetns(st.Isolation.Path))
	require.NotEmpty(t, st.Network.Address)
	rulesOfAlloc := strings.Count(iptablesSave(t), id)
	require.NotZero(t, rulesOfAlloc)

	// A listener inside the namespace answers on the host port.
	ln := exec.Command("nsenter", "--net="+st.Isolation.Path, "python3", "-c",
		"import socket;s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(('0.0.0.0',8080));s.listen(1);c,_=s.accept();c.send(b'hello');c.close()")
	require.NoError(t, ln.Start())
	t.Cleanup(func() {
		if ln.ProcessState == nil {
			_ = ln.Process.Kill()
			_ = ln.Wait()
		}
	})
	var got string
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", hostPort), time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		b := make([]byte, 5)
		n, _ := c.Read(b)
		got = string(b[:n])
		return got == "hello"
	}, 10*time.Second, 100*time.Millisecond)

	// A second Setup reattaches: same address, nothing rebuilt.
	st2, err := m.Setup(ctx, alloc, spec, nil)
	require.NoError(t, err)
	require.Equal(t, st.Network.Address, st2.Network.Address)

	// A namespace lost with its attachment still cached (a crash, an
	// operator's `umount`): the next Setup deletes the stale attachment
	// (rules, address) and adds a new one.
	_ = ln.Process.Kill() // it holds the old namespace (and its veth) alive
	_ = ln.Wait()
	require.NoError(t, deleteNetns(st.Isolation.Path))
	st3, err := m.Setup(ctx, alloc, spec, nil)
	require.NoError(t, err)
	require.True(t, isNetns(st3.Isolation.Path))
	require.Equal(t, rulesOfAlloc, strings.Count(iptablesSave(t), id),
		"as many rules of the allocation as after its first setup, not stale ones beside them")

	require.NoError(t, m.Teardown(ctx, id, nil, nil))
	require.False(t, isNetns(st.Isolation.Path))
	_, err = os.Stat(st.Isolation.Path)
	require.True(t, os.IsNotExist(err))
	require.NotContains(t, iptablesSave(t), id)
	// No thread of the client stays in a namespace it made.
	self, err := os.Readlink("/proc/self/ns/net")
	require.NoError(t, err)
	ents, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	for _, e := range ents {
		l, err := os.Readlink("/proc/self/task/" + e.Name() + "/ns/net")
		if err == nil {
			require.Equal(t, self, l, "thread %s", e.Name())
		}
	}
	// The lost namespace's veth goes with it, when the kernel frees it
	// (asynchronously).
	require.Eventually(t, func() bool {
		links, _ := exec.Command("ip", "-o", "link", "show", "master", m.cfg.Bridge.Name).CombinedOutput()
		return !strings.Contains(string(links), "veth")
	}, 10*time.Second, 50*time.Millisecond, "no veth on the bridge")
}

// TestManagerCleanupOrphans: an allocation the client no longer runs
// (its teardown never ran) loses its namespace and rules on Cleanup; a
// live one keeps them.
func TestManagerCleanupOrphans(t *testing.T) {
	m := testManager(t)
	ctx := context.Background()
	gone, kept := bridgeAlloc("0a1b2c3d-0000-4000-8000-00000000dead"), bridgeAlloc("0a1b2c3d-0000-4000-8000-00000000beef")
	for _, a := range []*structs.Allocation{gone, kept} {
		spec, _ := GroupSpec(a)
		_, err := m.Setup(ctx, a, spec, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Teardown(ctx, a.ID, nil, nil) })
	}
	require.NoError(t, m.Cleanup(ctx, map[string]bool{kept.ID: true}, nil))
	require.False(t, isNetns(m.NetnsPath(gone.ID)))
	require.True(t, isNetns(m.NetnsPath(kept.ID)))
	rules := iptablesSave(t)
	require.NotContains(t, rules, gone.ID)
	require.Contains(t, rules, kept.ID)
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestManagerCNINetwork sets up a cni/<name> network from the config dir
// (a bridge of the test's own), with cni { args }: the plugins get the
// arguments (the bridge plugin accepts the unknown one because
// IgnoreUnknown comes first), and teardown leaves nothing.
func TestManagerCNINetwork(t *testing.T) {
	m := testManager(t)
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "drvc" + hex.EncodeToString(b)
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", name).Run()
		_ = os.RemoveAll("/var/lib/cni/networks/" + name)
	})
	conf := fmt.Sprintf(`{"cniVersion": "0.4.0", "name": %q, "plugins": [
  {"type": "bridge", "bridge": %q, "isGateway": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.215.%d.0/24"}]]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}
]}`, name, name, b[0])
	require.NoError(t, os.WriteFile(filepath.Join(m.cfg.CNIConfigDir, "10-test.conflist"), []byte(conf), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(m.cfg.CNIConfigDir, "20-broken.conflist"), []byte("{"), 0o644))
	require.Equal(t, []string{name}, m.CNINetworks(), "the broken file is left out")

	alloc := bridgeAlloc("0a1b2c3d-0000-4000-8000-0000000c0c0c", structs.AllocatedPortMapping{Label: "p", Value: freePort(t), To: 80})
	n := alloc.Job.TaskGroups[0].Networks[0]
	n.Mode, n.CNI = "cni/"+name, &structs.CNIConfig{Args: map[string]string{"DROVER_TEST": "yes"}}
	spec, ok := GroupSpec(alloc)
	require.True(t, ok)
	ctx := context.Background()
	st, err := m.Setup(ctx, alloc, spec, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Teardown(ctx, alloc.ID, nil, nil) })
	require.True(t, strings.HasPrefix(st.Network.Address, fmt.Sprintf("10.215.%d.", b[0])), st.Network.Address)
	require.Contains(t, iptablesSave(t), alloc.ID)

	require.NoError(t, m.Teardown(ctx, alloc.ID, nil, nil))
	require.False(t, isNetns(m.NetnsPath(alloc.ID)))
	require.NotContains(t, iptablesSave(t), alloc.ID)

	// A network the config dir does not have fails the setup, naming it.
	n.Mode = "cni/nope"
	spec, _ = GroupSpec(alloc)
	_, err = m.Setup(ctx, alloc, spec, nil)
	require.ErrorContains(t, err, `CNI network "nope"`)
}
