package e2e

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	dockerclient "github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// The corpusRuns entries of the files about bridge networking and host
// volumes. Every corpus client has a bridge and subnet of the run's own
// (cc.subnets); corpusVolumeNode has the host volumes.

// bridgeAlloc is the allocation allocID of a group in bridge mode: it has
// an address of its own, on the subnet of its node's bridge, and a network
// namespace on that node.
func (cc *corpusCluster) bridgeAlloc(t *testing.T, allocID string) *api.Allocation {
	t.Helper()
	a, _, err := cc.c.Allocations().Info(allocID, nil)
	require.NoError(t, err)
	require.NotNil(t, a.NetworkStatus, "a bridge-mode allocation reports its network")
	addr, err := netip.ParseAddr(a.NetworkStatus.Address)
	require.NoError(t, err, "the allocation's address %q", a.NetworkStatus.Address)
	subnet := netip.MustParsePrefix(cc.subnets[a.NodeName])
	require.True(t, subnet.Contains(addr), "address %s on %s's bridge subnet %s", addr, a.NodeName, subnet)
	require.FileExists(t, filepath.Join(cc.clients[a.NodeName].dataDir, "netns", allocID), "the allocation's namespace")
	return a
}

// resolvLines are the lines of a resolv.conf, trimmed, without comments.
func resolvLines(conf string) []string {
	var out []string
	for _, l := range strings.Split(conf, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// functionsIPNetRun: the cidr functions' results reach the task as meta
// (NOMAD_META_*, the functions' known results); the group's dns server,
// cidrhost(var.vpc_cidr, 2), is the task's resolv.conf's; the group runs
// in a namespace on the bridge. busybox's shell has nothing to do here:
// the probe image runs in its place.
var functionsIPNetRun = corpusRun{
	prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		cc.probe(corpusTask(t, job, "g", "t"), "hold", "/etc/resolv.conf")
	},
	check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		requireBridge(t)
		a := cc.waitAllocs(t, "ipnet", 1, "running", nil)[0]
		cc.bridgeAlloc(t, a.ID)
		rep := cc.reportOf(t, a.ID, "t", nil)
		requireMeta(t, rep, job, "g", "t")
		for k, v := range map[string]string{
			"cidrhost":      "10.20.4.10",
			"cidrhost_neg":  "10.20.4.254",
			"cidrnetmask":   "255.240.0.0",
			"cidrsubnet":    "10.20.3.0/24",
			"cidrsubnet_v6": "fd00:fd12:3456:7800:a200::/72",
			"cidrsubnets":   "10.1.0.0/20 10.1.16.0/20 10.1.32.0/24 10.1.48.0/20",
		} {
			require.Equal(t, v, rep.Env["NOMAD_META_"+k], k)
		}
		require.Equal(t, []string{"nameserver 10.20.0.2"}, resolvLines(rep.Files["/etc/resolv.conf"]),
			"dns servers = [cidrhost(var.vpc_cidr, 2)]")
	},
}

// networkBridgeRun: the group is placed on the one node with host network
// "private"; in a namespace on the bridge, with hostname whoami-0 and the
// dns block's resolv.conf; port admin is mapped on private's address at
// 9901 (the task has NOMAD_HOST_IP_admin) and answers there, not on the
// node's default address; port http is mapped on the default address.
// traefik/whoami is not here: the probe image serves in its place, on
// 9901 (PORT).
var networkBridgeRun = corpusRun{
	prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		task := corpusTask(t, job, "whoami", "whoami")
		task.Config["image"] = cc.image
		delete(task.Config, "args")
		task.Env = map[string]string{"PORT": "9901", "PROBE_REPORT": "1", "PROBE_SHOW": "/etc/resolv.conf"}
	},
	check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		requireBridge(t)
		a := cc.waitAllocs(t, "whoami", 1, "running", nil)[0]
		require.Equal(t, cc.nodeIDs[corpusHostNetNode], a.NodeID, "placed where host network private is")
		full := cc.bridgeAlloc(t, a.ID)
		ports := map[string]api.PortMapping{}
		for _, p := range full.AllocatedResources.Shared.Ports {
			ports[p.Label] = p
		}
		require.Equal(t, api.PortMapping{Label: "admin", Value: 9901, To: 9901, HostIP: cc.private}, ports["admin"])
		require.Empty(t, ports["http"].HostIP, "http is on the node's default address")
		rep := cc.reportOf(t, a.ID, "whoami", nil)
		require.Equal(t, "whoami-0", rep.Hostname)
		require.Equal(t, cc.private, rep.Env["NOMAD_HOST_IP_admin"])
		require.Equal(t, []string{"search service.consul", "nameserver 10.0.0.2", "nameserver 1.1.1.1", "options ndots:2"},
			resolvLines(rep.Files["/etc/resolv.conf"]))
		var body string
		require.Eventually(t, func() bool {
			var err error
			body, err = get(cc.private + ":9901")
			return err == nil
		}, 30*time.Second, 200*time.Millisecond, "admin answers on %s:9901", cc.private)
		require.Contains(t, body, "version")
		_, err := get("127.0.0.1:9901")
		require.Error(t, err, "admin is not mapped on the node's default address")
	},
}

// volumesHostRun: the job is placed on the one node offering both host
// volumes; pgdata is mounted read-write at /var/lib/postgresql/data (the
// task writes there, the file is in the node's directory), tls-certs
// read-only at /etc/ssl/pg (the task reads the node's file; its write
// fails), with private propagation; the data outlives the allocation: a
// replacement (a destructive update) reads what the first wrote, as a
// database's data directory must. postgres is not here: the probe image
// runs in its place (POSTGRES_DB reaches it).
var volumesHostRun = corpusRun{
	prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		cc.probe(corpusTask(t, job, "db", "postgres"), "hold", "/etc/ssl/pg/server.crt", "/var/lib/postgresql/data/written")
	},
	check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		first := cc.waitAllocs(t, "postgres", 1, "running", nil)[0]
		require.Equal(t, cc.nodeIDs[corpusVolumeNode], first.NodeID, "placed where host volumes pgdata and tls-certs are")
		rep := cc.reportOf(t, first.ID, "postgres", nil)
		require.Equal(t, "app", rep.Env["POSTGRES_DB"])
		require.Equal(t, "corpus cert\n", rep.Files["/etc/ssl/pg/server.crt"], "tls-certs at /etc/ssl/pg")
		require.Empty(t, rep.Files["/var/lib/postgresql/data/written"])

		ins := cc.inspect(t, first.ID, "postgres")
		mounts := map[string]container.MountPoint{}
		for _, m := range ins.Mounts {
			mounts[m.Destination] = m
		}
		data, certs := mounts["/var/lib/postgresql/data"], mounts["/etc/ssl/pg"]
		require.Equal(t, cc.volumes["pgdata"], data.Source)
		require.True(t, data.RW, "pgdata is read-write")
		require.Equal(t, cc.volumes["tls-certs"], certs.Source)
		require.False(t, certs.RW, "certs is read-only")
		require.EqualValues(t, "rprivate", certs.Propagation, `propagation_mode = "private"`)

		code, out := dockerExec(t, ins.ID, "/server", "probe", "write", "/var/lib/postgresql/data/written")
		require.Equal(t, 0, code, out)
		require.FileExists(t, filepath.Join(cc.volumes["pgdata"], "written"), "the task's write is in the node's directory")
		code, out = dockerExec(t, ins.ID, "/server", "probe", "write", "/etc/ssl/pg/evil")
		require.Equal(t, 3, code, out)
		require.Contains(t, out, "read-only file system")
		_, err := os.Stat(filepath.Join(cc.volumes["tls-certs"], "evil"))
		require.True(t, os.IsNotExist(err), "nothing was written to the read-only volume")

		// A destructive update replaces the allocation; the replacement
		// finds what the first wrote.
		corpusTask(t, job, "db", "postgres").Env["CORPUS_GENERATION"] = "2"
		cc.register(t, job)
		var second *api.AllocationListStub
		require.Eventually(t, func() bool {
			stubs, _, err := cc.c.Jobs().Allocations("postgres", true, nil)
			if err != nil {
				return false
			}
			for _, s := range stubs {
				if s.ID != first.ID && s.DesiredStatus == "run" && s.ClientStatus == "running" {
					second = s
					return true
				}
			}
			return false
		}, 90*time.Second, 200*time.Millisecond, "the replacement runs")
		require.Equal(t, cc.nodeIDs[corpusVolumeNode], second.NodeID)
		rep = cc.reportOf(t, second.ID, "postgres", nil)
		require.Equal(t, "2", rep.Env["CORPUS_GENERATION"])
		require.Equal(t, "written by probe\n", rep.Files["/var/lib/postgresql/data/written"], "the data outlived the first allocation")
	},
}

// dockerExec runs cmd in container id and returns its exit code and
// output (stdout then stderr).
func dockerExec(t *testing.T, id string, cmd ...string) (int, string) {
	t.Helper()
	d, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation())
	require.NoError(t, err)
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ex, err := d.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	require.NoError(t, err)
	att, err := d.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	_, err = stdcopy.StdCopy(&stdout, &stderr, att.Reader)
	att.Close()
	require.NoError(t, err)
	var st container.ExecInspect
	require.Eventually(t, func() bool {
		st, err = d.ContainerExecInspect(ctx, ex.ID)
		return err == nil && !st.Running
	}, 10*time.Second, 50*time.Millisecond, "exec %v ends", cmd)
	return st.ExitCode, stdout.String() + stderr.String()
}
