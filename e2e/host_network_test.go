package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	dockerclient "github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/testutil/images"
	"github.com/drover-project/drover/testutil/registry"
)

// hostNetJobHCL is a raw_exec service whose port "http" (static port) is on
// host network net; the webserver binds only on NOMAD_IP_http.
func hostNetJobHCL(id, net string, port int, bin string) string {
	return fmt.Sprintf(`job %[1]q {
  datacenters = ["dc1"]
  group "web" {
    network {
      port "http" {
        static       = %[3]d
        host_network = %[2]q
      }
    }
    task "server" {
      driver = "raw_exec"
      config {
        command = %[4]q
      }
      env {
        BIND    = "${NOMAD_IP_http}"
        PORT    = "${NOMAD_PORT_http}"
        VERSION = %[1]q
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`, id, net, port, bin)
}

// get answers the body of GET http://addr/, or the error.
func get(addr string) (string, error) {
	cl := &http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get("http://" + addr + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestHostNetworks: a client with two host networks (two addresses of a
// bridge device this test makes) advertises them; a port on one is mapped
// on its address and the service answers there only; the same static port
// on the other network is a different port; a host network's reserved
// port is not handed out; a job asking for a host network no node has is
// not placed and the placement failure names it.
func TestHostNetworks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to add addresses to a device")
	}
	dev, pub, other := hostNetDevice(t)
	bin := filepath.Join(t.TempDir(), "webserver")
	out, err := exec.Command("go", "build", "-o", bin, "../testutil/images/webserver").CombinedOutput()
	require.NoError(t, err, "build the webserver: %s", out)

	port, reserved := freePort(t), freePort(t)
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	newClientAgentWith(t, "hostnet", fmt.Sprintf(`host_network "public" {
    cidr           = "%s/32"
    reserved_ports = "%d"
  }
  host_network "other" {
    interface = %q
    cidr      = "%s/32"
  }`, pub, reserved, dev, other), "", srv.httpHostPort())
	waitReadyNodes(t, c, 1)

	// The node advertises its host networks as configured.
	nodeID := nodeIDOf(t, c, "hostnet")
	node, _, err := c.Nodes().Info(nodeID, nil)
	require.NoError(t, err)
	require.Equal(t, &api.HostNetworkInfo{Name: "public", CIDR: pub + "/32", ReservedPorts: fmt.Sprint(reserved)}, node.HostNetworks["public"])
	require.Equal(t, &api.HostNetworkInfo{Name: "other", CIDR: other + "/32", Interface: dev}, node.HostNetworks["other"])
	code, msg := drover(t, srv.httpAddr(), "node", "status", "-verbose", nodeID)
	require.Equal(t, 0, code, msg)
	require.Regexp(t, `(?m)^Host Networks\nName\s+CIDR\s+Interface\s+ReservedPorts\nother\s+`+other+`/32\s+`+dev+`\s+<none>\npublic\s+`+pub+`/32\s+<none>\s+`+fmt.Sprint(reserved)+`$`, msg)

	// The same static port on each network: two ports, both placed.
	for id, net := range map[string]string{"on-public": "public", "on-other": "other"} {
		code, out := drover(t, srv.httpAddr(), "job", "run", "-detach", writeJobFile(t, hostNetJobHCL(id, net, port, bin)))
		require.Equal(t, 0, code, out)
	}
	for id, addr := range map[string]string{"on-public": pub, "on-other": other} {
		require.Eventually(t, func() bool { return len(runningAllocs(t, c, id)) == 1 }, 60*time.Second, 200*time.Millisecond, "%s runs", id)
		stub := runningAllocs(t, c, id)[nodeID]
		require.NotNil(t, stub)
		a, _, err := c.Allocations().Info(stub.ID, nil)
		require.NoError(t, err)
		require.Len(t, a.AllocatedResources.Shared.Ports, 1)
		require.Equal(t, api.PortMapping{Label: "http", Value: port, HostIP: addr}, a.AllocatedResources.Shared.Ports[0])
		// The task got the address in its environment and bound there.
		hostPort := fmt.Sprintf("%s:%d", addr, port)
		var body string
		require.Eventually(t, func() bool { body, err = get(hostPort); return err == nil }, 30*time.Second, 100*time.Millisecond, "%s answers on %s", id, hostPort)
		require.Equal(t, "version "+id+"\n", body)
	}
	_, err = get(fmt.Sprintf("127.0.0.1:%d", port))
	require.Error(t, err, "nothing answers on the node's default address")

	// A host network's reserved port is not handed out on it.
	code, msg = drover(t, srv.httpAddr(), "job", "run", "-detach", writeJobFile(t, hostNetJobHCL("on-reserved", "public", reserved, bin)))
	require.Equal(t, 0, code, msg)
	m := failedPlacement(t, c, "on-reserved")
	require.Equal(t, map[string]int{"network: reserved port collision": 1}, m.DimensionExhausted)

	// No node has host network "dmz": not placed, and the failure says why.
	code, msg = drover(t, srv.httpAddr(), "job", "run", "-detach", writeJobFile(t, hostNetJobHCL("on-dmz", "dmz", port, bin)))
	require.Equal(t, 0, code, msg)
	m = failedPlacement(t, c, "on-dmz")
	require.Equal(t, map[string]int{`missing host network "dmz" for port "http"`: 1}, m.ConstraintFiltered)
	code, msg = drover(t, srv.httpAddr(), "job", "status", "on-dmz")
	require.Equal(t, 0, code, msg)
	require.Contains(t, msg, `Constraint "missing host network \"dmz\" for port \"http\"": 1 node excluded by filter`)
}

// hostNetDevice makes a bridge device of the test's own with two
// addresses (/32 each), removed at cleanup, and returns its name and them.
func hostNetDevice(t *testing.T) (dev, a, b string) {
	t.Helper()
	var rnd [2]byte
	_, _ = rand.Read(rnd[:])
	dev = fmt.Sprintf("drvhn%02x%02x", rnd[0], rnd[1])
	a, b = fmt.Sprintf("10.218.%d.1", rnd[1]), fmt.Sprintf("10.218.%d.2", rnd[1])
	for _, args := range [][]string{
		{"link", "add", dev, "type", "bridge"},
		{"addr", "add", a + "/32", "dev", dev},
		{"addr", "add", b + "/32", "dev", dev},
		{"link", "set", dev, "up"},
	} {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if args[0] == "link" && args[1] == "add" {
			t.Cleanup(func() { _ = exec.Command("ip", "link", "del", dev).Run() })
		}
		require.NoError(t, err, "ip %v: %s", args, out)
	}
	return dev, a, b
}

// TestHostNetworksDocker: a Docker task in host mode whose port is on a
// host network is published on that network's address only (the
// container's port binding names it) and answers there.
func TestHostNetworksDocker(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to add addresses to a device")
	}
	requireDocker(t)
	dev, pub, other := hostNetDevice(t)
	reg := registry.Start(t, registry.Options{})
	img, err := images.Build(images.BuildOptions{Version: "hostnet", Seed: time.Now().UnixNano()})
	require.NoError(t, err)
	ref := reg.Ref("drover-e2e/hostnet", "v1")
	digest, err := images.Push(img, ref)
	require.NoError(t, err)
	t.Cleanup(func() { removeImages(t, []string{ref, ref + "@" + digest}) })

	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	lo := freePort(t)
	newClientAgentWith(t, "hostnet-docker", fmt.Sprintf(`min_dynamic_port = %d
  max_dynamic_port = %d
  host_network "public" {
    interface = %q
    cidr      = "%s/32"
  }`, lo, lo, dev, pub), "", srv.httpHostPort())
	waitReadyNodes(t, c, 1)
	var allocID string
	t.Cleanup(func() {
		_, _ = drover(t, srv.httpAddr(), "job", "stop", "-purge", "-yes", "hn-docker")
		removeAllocContainers(t, []string{allocID})
	})
	code, out := drover(t, srv.httpAddr(), "job", "run", "-detach", writeJobFile(t, fmt.Sprintf(`job "hn-docker" {
  datacenters = ["dc1"]
  group "web" {
    network {
      port "http" {
        to           = 8080
        host_network = "public"
      }
    }
    task "server" {
      driver = "docker"
      config {
        image = %q
        ports = ["http"]
      }
      env {
        VERSION = "hn-docker"
      }
      resources {
        cpu    = 50
        memory = 64
      }
    }
  }
}
`, ref)))
	require.Equal(t, 0, code, out)
	require.Eventually(t, func() bool { return len(runningAllocs(t, c, "hn-docker")) == 1 }, 90*time.Second, 200*time.Millisecond)
	for _, a := range runningAllocs(t, c, "hn-docker") {
		allocID = a.ID
	}
	a, _, err := c.Allocations().Info(allocID, nil)
	require.NoError(t, err)
	require.Equal(t, []api.PortMapping{{Label: "http", Value: lo, To: 8080, HostIP: pub}}, a.AllocatedResources.Shared.Ports)

	d, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation())
	require.NoError(t, err)
	defer d.Close()
	list, err := d.ContainerList(context.Background(), container.ListOptions{Filters: filters.NewArgs(filters.Arg("label", "drover.alloc_id="+allocID))})
	require.NoError(t, err)
	require.Len(t, list, 1)
	ins, err := d.ContainerInspect(context.Background(), list[0].ID)
	require.NoError(t, err)
	require.Equal(t, []nat.PortBinding{{HostIP: pub, HostPort: fmt.Sprint(lo)}}, ins.HostConfig.PortBindings["8080/tcp"], "published on the host network's address")

	hostPort := fmt.Sprintf("%s:%d", pub, lo)
	var body string
	require.Eventually(t, func() bool { body, err = get(hostPort); return err == nil }, 30*time.Second, 100*time.Millisecond, "answers on %s", hostPort)
	require.Equal(t, "version hn-docker\n", body)
	for _, addr := range []string{other, "127.0.0.1"} {
		_, err = get(fmt.Sprintf("%s:%d", addr, lo))
		require.Error(t, err, "not published on %s", addr)
	}
}

// failedPlacement waits for the job's evaluation to complete and returns
// the placement failure of its group "web".
func failedPlacement(t *testing.T, c *api.Client, jobID string) *api.AllocationMetric {
	t.Helper()
	var m *api.AllocationMetric
	require.Eventually(t, func() bool {
		evals, _, err := c.Jobs().Evaluations(jobID, nil)
		if err != nil {
			return false
		}
		for _, e := range evals {
			if e.Status == "complete" && e.FailedTGAllocs["web"] != nil {
				m = e.FailedTGAllocs["web"]
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "%s has a failed placement", jobID)
	require.Empty(t, runningAllocs(t, c, jobID))
	return m
}
