package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	dockerclient "github.com/docker/docker/client"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/testutil/images"
	"github.com/drover-project/drover/testutil/registry"
)

// The ports the tasks of the bridge job listen on inside the namespace:
// unusual ones, so that nothing else on the host answers on them.
const bridgeDockerPort, bridgeRawPort = 18087, 19097

// bridgeJobHCL is a service group in bridge mode: a Docker web server
// (static port), a raw_exec web server (dynamic port) that first reaches
// the Docker one on localhost, and a Docker prober that reaches the
// raw_exec one on localhost.
const bridgeJobHCL = `
variable "image" {
  type = string
}
variable "server" {
  type = string
}
variable "static" {
  type = number
}
job "bridge" {
  datacenters = ["dc1"]
  type        = "service"
  group "g" {
    network {
      mode = "bridge"
      port "st" {
        static = var.static
        to     = 18087
      }
      port "dyn" {
        to = 19097
      }
    }
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "web" {
      driver = "docker"
      config {
        image = var.image
      }
      env {
        PORT    = "18087"
        VERSION = "docker"
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
    task "side" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args = ["-c", <<EOT
env > "$NOMAD_ALLOC_DIR/data/side.env"
until curl -sf http://127.0.0.1:18087/ > "$NOMAD_ALLOC_DIR/data/from-docker.tmp"; do sleep 0.2; done
mv "$NOMAD_ALLOC_DIR/data/from-docker.tmp" "$NOMAD_ALLOC_DIR/data/from-docker"
PORT=19097 VERSION=rawexec exec "${var.server}"
EOT
        ]
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
    task "prober" {
      driver = "docker"
      config {
        image = var.image
        args  = ["probe", "get", "http://127.0.0.1:19097/", "sleep"]
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
  }
  # No Docker task: the client makes the namespace itself.
  group "solo" {
    network {
      mode = "bridge"
      port "solo" {
        to = 19098
      }
    }
    task "serve" {
      driver = "raw_exec"
      config {
        command = var.server
      }
      env {
        PORT    = "19098"
        VERSION = "solo"
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
  }
}
`

// bridgeExJobHCL is a bridge-mode group with a dns block and a hostname,
// and Docker and exec tasks.
const bridgeExJobHCL = `
variable "image" {
  type = string
}
job "bridge-ex" {
  datacenters = ["dc1"]
  type        = "service"
  # The group's dns block and hostname, seen by Docker and exec tasks.
  group "ex" {
    network {
      mode     = "bridge"
      hostname = "bridged-${NOMAD_ALLOC_INDEX}"
      dns {
        servers  = ["10.214.255.53"]
        searches = ["drover.test"]
        options  = ["ndots:3"]
      }
    }
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "web" {
      driver = "docker"
      config {
        image = var.image
      }
      env {
        PORT    = "18087"
        VERSION = "docker-ex"
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
    task "prober" {
      driver = "docker"
      config {
        image = var.image
        args  = ["probe", "cat", "/etc/resolv.conf", "cat", "/etc/hostname", "sleep"]
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
    task "look" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args = ["-c", <<EOT
cat /etc/resolv.conf
echo "hostname=$(cat /proc/sys/kernel/hostname)"
until curl -sf http://127.0.0.1:18087/; do sleep 0.2; done
echo
echo reached-docker
exec sleep 3600
EOT
        ]
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
  }
}
`

// requireBridge skips, loudly, unless this host can do bridge mode: root
// and the reference CNI plugins in /usr/lib/cni (make test installs
// Debian's containernetworking-plugins).
func requireBridge(t testing.TB) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "not root"
	}
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap", "firewall"} {
		if _, err := os.Stat(filepath.Join("/usr/lib/cni", p)); err != nil && why == "" {
			why = "CNI plugin " + p + " missing (apt-get install containernetworking-plugins)"
		}
	}
	if why != "" {
		msg := fmt.Sprintf("BRIDGE NETWORKING NOT AVAILABLE: skipping %s: %s", t.Name(), why)
		fmt.Fprintln(os.Stderr, msg)
		t.Skip(msg)
	}
}

// bridgeClient starts a client on a bridge and subnet of the test's own,
// removed (with its IPAM state) when the test ends.
func bridgeClient(t *testing.T, server string) (*agentProc, string) {
	return bridgeClientWith(t, "bridge-client", 27000, server)
}

// bridgeClientWith is bridgeClient with the client's name and the first
// of its 100 dynamic ports.
func bridgeClientWith(t testing.TB, name string, minPort int, server string) (*agentProc, string) {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	bridge := "drve" + hex.EncodeToString(b)
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", bridge).Run()
		_ = os.RemoveAll("/var/lib/cni/networks/" + bridge)
	})
	c := newClientAgentWith(t, name, fmt.Sprintf(`min_dynamic_port = %d
  max_dynamic_port = %d
  cni_path = "/usr/lib/cni"
  bridge_network_name = %q
  bridge_network_subnet = "10.214.%d.0/24"`, minPort, minPort+99, bridge, b[0]), "", server)
	return c, bridge
}

func httpBody(url string) (string, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestBridgeNetworking runs a bridge-mode group with Docker and raw_exec
// tasks on a real client: the tasks reach each other on localhost, the
// host reaches the group on its mapped static and dynamic ports (not on
// the ports inside the namespace), the tasks see the bridge-mode
// variables; a client killed with SIGKILL and restarted reattaches to the
// same namespace and pause container and the group still answers. Once a
// job stops, no namespace, veth, iptables rule or pause container of its
// allocation remains; nor once a client killed while its allocation was
// purged starts again.
func TestBridgeNetworking(t *testing.T) {
	requireDocker(t)
	requireBridge(t)
	reg := registry.Start(t, registry.Options{})
	img, err := images.Build(images.BuildOptions{Version: "bridge", Seed: time.Now().UnixNano()})
	require.NoError(t, err)
	ref := reg.Ref("drover-e2e/bridge", "v1")
	digest, err := images.Push(img, ref)
	require.NoError(t, err)
	t.Cleanup(func() { removeImages(t, []string{ref, ref + "@" + digest}) })
	serverBin, err := images.ServerBinary()
	require.NoError(t, err)
	serverPath := filepath.Join(t.TempDir(), "webserver")
	require.NoError(t, os.WriteFile(serverPath, serverBin, 0o755))

	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	client, bridge := bridgeClient(t, srv.httpHostPort())
	waitReadyNodes(t, c, 1)
	node, _, err := c.Nodes().Info(nodeIDOf(t, c, "bridge-client"), nil)
	require.NoError(t, err)
	var modes []string
	for _, n := range node.NodeResources.Networks {
		modes = append(modes, n.Mode)
	}
	require.Contains(t, modes, "bridge", "the node advertises bridge mode")

	t.Cleanup(func() { removePauseImages(t) })
	static := freePort(t)
	jobFile, exJobFile := writeJobFile(t, bridgeJobHCL), writeJobFile(t, bridgeExJobHCL)
	var allocID, exAllocID string
	t.Cleanup(func() {
		_, _ = drover(t, srv.httpAddr(), "job", "stop", "-purge", "-yes", "bridge")
		_, _ = drover(t, srv.httpAddr(), "job", "stop", "-purge", "-yes", "bridge-ex")
		removeAllocContainers(t, []string{allocID, exAllocID})
	})
	code, out := drover(t, srv.httpAddr(), "job", "run", "-detach",
		"-var", "image="+ref, "-var", "server="+serverPath, "-var", fmt.Sprintf("static=%d", static), jobFile)
	require.Equal(t, 0, code, out)
	code, out = drover(t, srv.httpAddr(), "job", "run", "-detach", "-var", "image="+ref, exJobFile)
	require.Equal(t, 0, code, out)
	alloc := runningGroupAlloc(t, c, "bridge", "g")
	exAlloc := runningGroupAlloc(t, c, "bridge-ex", "ex")
	soloAlloc := runningGroupAlloc(t, c, "bridge", "solo")
	allocID, exAllocID = alloc.ID, exAlloc.ID
	require.NotNil(t, alloc.NetworkStatus)
	allocIP := alloc.NetworkStatus.Address
	require.NotEmpty(t, allocIP, "the allocation reports its address on the bridge")
	require.True(t, strings.HasPrefix(allocIP, "10.214."), "address %s from the client's subnet", allocIP)
	ports := map[string]*api.PortMapping{}
	for _, p := range alloc.AllocatedResources.Shared.Ports {
		ports[p.Label] = &p
	}
	require.Equal(t, static, ports["st"].Value)
	dyn := ports["dyn"].Value
	require.True(t, dyn >= 27000 && dyn <= 27099, "dynamic port %d", dyn)
	hostIP := ports["st"].HostIP
	if hostIP == "" {
		hostIP = node.Attributes["unique.network.ip-address"] // what NOMAD_IP_* falls back to
	}
	require.NotEmpty(t, hostIP)

	dataDir := filepath.Join(client.dataDir, "alloc", allocID, "alloc", "data")
	// raw_exec -> Docker on localhost.
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(dataDir, "from-docker"))
		return err == nil && strings.Contains(string(b), "version docker")
	}, 60*time.Second, 200*time.Millisecond, "the raw_exec task reaches the Docker task on localhost\n%s", lastLines(client.logs(), 40))
	// Docker -> raw_exec on localhost.
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(client.dataDir, "alloc", allocID, "alloc", "logs", "prober.stdout.0"))
		return err == nil && strings.Contains(string(b), "version rawexec")
	}, 60*time.Second, 200*time.Millisecond, "the Docker prober reaches the raw_exec task on localhost")
	// The group's dns block and hostname: the Docker task's through the
	// pause container, the exec task's in its own mounts; the exec task
	// reaches the Docker one on localhost.
	exLogs := filepath.Join(client.dataDir, "alloc", exAlloc.ID, "alloc", "logs")
	for _, task := range []string{"prober", "look"} {
		require.Eventually(t, func() bool {
			b, _ := os.ReadFile(filepath.Join(exLogs, task+".stdout.0"))
			out := string(b)
			return strings.Contains(out, "nameserver 10.214.255.53") && strings.Contains(out, "search drover.test") &&
				strings.Contains(out, "options ndots:3") && strings.Contains(out, "bridged-0")
		}, 30*time.Second, 200*time.Millisecond, "task %s sees the group's resolv.conf and hostname", task)
	}
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(exLogs, "look.stdout.0"))
		return strings.Contains(string(b), "version docker-ex") && strings.Contains(string(b), "reached-docker")
	}, 30*time.Second, 200*time.Millisecond, "the exec task reaches the Docker task on localhost")

	// The host reaches the group on its mapped ports, not on the ports
	// inside the namespace.
	for port, want := range map[int]string{static: "version docker", dyn: "version rawexec"} {
		url := fmt.Sprintf("http://%s/", net.JoinHostPort(hostIP, fmt.Sprint(port)))
		require.Eventually(t, func() bool {
			body, err := httpBody(url)
			return err == nil && strings.Contains(body, want)
		}, 20*time.Second, 200*time.Millisecond, "GET %s", url)
	}
	soloURL := fmt.Sprintf("http://%s/", net.JoinHostPort(hostIP, fmt.Sprint(soloAlloc.AllocatedResources.Shared.Ports[0].Value)))
	require.Eventually(t, func() bool {
		body, err := httpBody(soloURL)
		return err == nil && strings.Contains(body, "version solo")
	}, 20*time.Second, 200*time.Millisecond, "GET %s (a group without Docker tasks)", soloURL)
	require.NotEqual(t, allocIP, soloAlloc.NetworkStatus.Address, "each allocation has its own address")
	for _, port := range []int{bridgeDockerPort, bridgeRawPort, 19098} {
		_, err := httpBody(fmt.Sprintf("http://%s/", net.JoinHostPort(hostIP, fmt.Sprint(port))))
		require.Error(t, err, "port %d inside the namespace is not the host's", port)
	}

	// The bridge-mode variables.
	envb, err := os.ReadFile(filepath.Join(dataDir, "side.env"))
	require.NoError(t, err)
	env := map[string]string{}
	for _, l := range strings.Split(string(envb), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	require.Equal(t, allocIP, env["NOMAD_ALLOC_IP_dyn"])
	require.Equal(t, fmt.Sprint(bridgeRawPort), env["NOMAD_ALLOC_PORT_dyn"])
	require.Equal(t, net.JoinHostPort(allocIP, fmt.Sprint(bridgeRawPort)), env["NOMAD_ALLOC_ADDR_dyn"])
	require.Equal(t, fmt.Sprint(dyn), env["NOMAD_HOST_PORT_dyn"])
	require.Equal(t, fmt.Sprint(bridgeRawPort), env["NOMAD_PORT_dyn"])
	require.Equal(t, hostIP, env["NOMAD_IP_st"])
	require.Equal(t, net.JoinHostPort(hostIP, fmt.Sprint(static)), env["NOMAD_ADDR_st"])

	netns := filepath.Join(client.dataDir, "netns", allocID)
	require.FileExists(t, netns)
	require.Contains(t, iptablesRules(t), allocID)

	// kill -9 and restart the client: it reattaches to the namespace (the
	// same one, not rebuilt) and the group still answers.
	nsBefore := nsInode(t, netns)
	pauseBefore := pauseContainerIDs(t, allocID)
	require.Len(t, pauseBefore, 1)
	client.kill()
	client.start(t)
	require.Eventually(t, func() bool {
		return strings.Contains(client.logs(), "reattached to the allocation's namespace")
	}, 60*time.Second, 200*time.Millisecond, "the restarted client reattaches\n%s", lastLines(client.logs(), 40))
	require.Equal(t, nsBefore, nsInode(t, netns), "the namespace was not rebuilt")
	require.Equal(t, pauseBefore, pauseContainerIDs(t, allocID), "the pause container was not replaced")
	for port, want := range map[int]string{static: "version docker", dyn: "version rawexec"} {
		body, err := httpBody(fmt.Sprintf("http://%s/", net.JoinHostPort(hostIP, fmt.Sprint(port))))
		require.NoError(t, err)
		require.Contains(t, body, want)
	}
	a, _, err := c.Allocations().Info(allocID, nil)
	require.NoError(t, err)
	require.Equal(t, "running", a.ClientStatus)

	// Stopping a job removes everything of its allocation's network.
	code, out = drover(t, srv.httpAddr(), "job", "stop", "-yes", "bridge-ex")
	require.Equal(t, 0, code, out)
	require.Eventually(t, func() bool { return networkGone(t, client, exAllocID) },
		60*time.Second, 200*time.Millisecond, "no namespace, iptables rule or pause container of the stopped allocation remains\n%s", lastLines(client.logs(), 40))
	_, err = os.Stat(filepath.Join(client.dataDir, "resolv", exAllocID+".conf"))
	require.True(t, os.IsNotExist(err), "the group's resolv.conf is removed")

	// An allocation purged while its client was killed: the next start
	// of the client removes its network.
	client.kill()
	code, out = drover(t, srv.httpAddr(), "job", "stop", "-purge", "-yes", "bridge")
	require.Equal(t, 0, code, out)
	require.FileExists(t, netns, "nothing removed it while the client was down")
	client.start(t)
	require.Eventually(t, func() bool {
		return networkGone(t, client, allocID) && networkGone(t, client, soloAlloc.ID) && !bridgeHasVeth(t, bridge)
	},
		60*time.Second, 200*time.Millisecond, "no namespace, veth, iptables rule or pause container remains\n%s", lastLines(client.logs(), 40))
}

// networkGone reports whether nothing of allocID's network is left: its
// namespace file, iptables rules and pause container.
func networkGone(t testing.TB, client *agentProc, allocID string) bool {
	if _, err := os.Stat(filepath.Join(client.dataDir, "netns", allocID)); !os.IsNotExist(err) {
		return false
	}
	return !strings.Contains(iptablesRules(t), allocID) && pauseContainers(t, allocID) == 0
}

func iptablesRules(t testing.TB) string {
	out, err := exec.Command("iptables-save").CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}

func bridgeHasVeth(t testing.TB, bridge string) bool {
	out, _ := exec.Command("ip", "-o", "link", "show", "master", bridge).CombinedOutput()
	return strings.Contains(string(out), "veth")
}

// runningGroupAlloc waits for a running allocation of job's group.
func runningGroupAlloc(t testing.TB, c *api.Client, jobID, group string) *api.Allocation {
	t.Helper()
	var alloc *api.Allocation
	require.Eventually(t, func() bool {
		stubs, _, err := c.Jobs().Allocations(jobID, false, nil)
		if err != nil {
			return false
		}
		for _, s := range stubs {
			if s.TaskGroup == group && s.ClientStatus == "running" {
				a, _, err := c.Allocations().Info(s.ID, nil)
				if err == nil {
					alloc = a
					return true
				}
			}
		}
		return false
	}, 90*time.Second, 200*time.Millisecond, "a running allocation of %s/%s", jobID, group)
	return alloc
}

// nsInode is the inode of the namespace mounted on path.
func nsInode(t *testing.T, path string) uint64 {
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(path, &st))
	return st.Ino
}

// pauseContainers counts the pause containers of allocID.
func pauseContainers(t testing.TB, allocID string) int { return len(pauseContainerIDs(t, allocID)) }

// pauseContainerIDs lists the IDs of the pause containers of allocID.
func pauseContainerIDs(t testing.TB, allocID string) []string {
	cli, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation())
	require.NoError(t, err)
	defer cli.Close()
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", "drover.alloc_id="+allocID), filters.Arg("label", "drover.pause"))})
	require.NoError(t, err)
	var ids []string
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	return ids
}

// removePauseImages removes the pause images clients imported that no
// container uses (one in use, by another test's allocation, stays).
func removePauseImages(t testing.TB) {
	cli, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation())
	if err != nil {
		return
	}
	defer cli.Close()
	list, err := cli.ImageList(context.Background(), image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", "drover-pause"))})
	if err != nil {
		return
	}
	for _, im := range list {
		_, _ = cli.ImageRemove(context.Background(), im.ID, image.RemoveOptions{})
	}
}
