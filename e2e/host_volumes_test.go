package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// hostVolumeJob is an exec service job of one allocation on the client's
// host volumes: "data" read-write at /data, "certs" (read-only on the
// node) at /certs. The task appends its VERSION to /data/state, tries to
// write to /certs and reports whether it could, then sleeps.
func hostVolumeJob(id, version string) *api.Job {
	job := api.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	script := strings.Join([]string{
		`echo "$VERSION" >> /data/state`,
		`if echo x > /certs/evil 2>/dev/null; then echo certs=writable; else echo certs=readonly; fi`,
		`echo "seed=$(cat /certs/seed)"`,
		`exec sleep 3600`,
	}, "; ")
	task := api.NewTask("app", "exec").SetConfig("command", "/bin/sh").SetConfig("args", []string{"-c", script})
	task.Resources = &api.Resources{CPU: new(50), MemoryMB: new(32)}
	task.Env = map[string]string{"VERSION": version} // a new version is a destructive update
	task.VolumeMounts = []*api.VolumeMount{
		{Volume: new("data"), Destination: new("/data")},
		{Volume: new("certs"), Destination: new("/certs"), ReadOnly: new(true)},
	}
	tg := api.NewTaskGroup("g", 1).AddTask(task)
	tg.Volumes = map[string]*api.VolumeRequest{
		"data":  {Name: "data", Type: "host", Source: "app-data"},
		"certs": {Name: "certs", Type: "host", Source: "app-certs", ReadOnly: true},
	}
	job.AddTaskGroup(tg)
	return job
}

// dataVolumeJob is hostVolumeJob with one volume, "data" from the host
// volume source at /data, to which the task appends its VERSION.
func dataVolumeJob(id, source string) *api.Job {
	job := hostVolumeJob(id, "1")
	job.TaskGroups[0].Volumes = map[string]*api.VolumeRequest{"data": {Name: "data", Type: "host", Source: source}}
	job.TaskGroups[0].Tasks[0].VolumeMounts = job.TaskGroups[0].Tasks[0].VolumeMounts[:1]
	job.TaskGroups[0].Tasks[0].Config["args"] = []string{"-c", `echo "$VERSION" >> /data/state && exec sleep 3600`}
	return job
}

// hostVolumeNode is the one ready node and whether its exec driver can
// run the volume's job (logged when not).
func hostVolumeNode(t *testing.T, c *api.Client) (*api.Node, bool) {
	t.Helper()
	waitReadyNodes(t, c, 1)
	nodes, _, err := c.Nodes().List(nil)
	require.NoError(t, err)
	node, _, err := c.Nodes().Info(nodes[0].ID, nil)
	require.NoError(t, err)
	withJob := node.Drivers["exec"] != nil && node.Drivers["exec"].Detected && node.Drivers["exec"].Healthy
	if !withJob {
		t.Logf("EXEC DRIVER UNUSABLE (euid %d): %+v; checking the volume without a job", os.Geteuid(), node.Drivers["exec"])
	}
	return node, withJob
}

// waitFileContent waits until the file at path holds want.
func waitFileContent(t *testing.T, path, want, msg string) {
	t.Helper()
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(path)
		return string(b) == want
	}, 30*time.Second, 100*time.Millisecond, msg)
}

// volumeInUse checks that the running job jobID wrote "1\n" to state in
// the volume's directory dir, that `volume delete id` is refused while it
// runs, and then stops the job.
func volumeInUse(t *testing.T, srv *agentProc, c *api.Client, id, dir, jobID string) {
	t.Helper()
	waitFileContent(t, filepath.Join(dir, "state"), "1\n", "the task wrote into the volume")
	code, out := drover(t, srv.httpAddr(), "volume", "delete", id)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "in use by allocations")
	_, _, err := c.Jobs().Deregister(jobID, true, nil)
	require.NoError(t, err)
}

// runVolumeSpec writes spec to a volume file, runs `volume verb` on it
// (create or register), checks that the command printed want and waited
// until the volume was ready, and returns the ID of the one volume there
// is.
func runVolumeSpec(t *testing.T, srv *agentProc, c *api.Client, verb, spec, want string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "v.volume.hcl")
	require.NoError(t, os.WriteFile(file, []byte(spec), 0o600))
	code, out := drover(t, srv.httpAddr(), "volume", verb, file)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, want)
	require.Regexp(t, `(?m)^State\s+= ready$`, out)
	vols, _, err := c.HostVolumes().List(nil, nil)
	require.NoError(t, err)
	require.Len(t, vols, 1)
	return vols[0].ID
}

// deleteVolume deletes volume id once no job uses it and returns what the
// command said.
func deleteVolume(t *testing.T, srv *agentProc, id string) string {
	t.Helper()
	var out string
	require.Eventually(t, func() bool {
		var code int
		code, out = drover(t, srv.httpAddr(), "volume", "delete", id)
		return code == 0
	}, 30*time.Second, 200*time.Millisecond, "delete once no job uses it: %s", out)
	return out
}

// TestHostVolumes: a client's host_volume blocks are on its node (and in
// `node status -verbose`); an exec task mounts one read-write and one
// read-only (its write there fails); the data it writes is the next
// allocation's after a destructive update; a job asking for a volume no
// node has is not placed, and the placement failure says why.
func TestHostVolumes(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	dataDir, certsDir := t.TempDir(), t.TempDir()
	require.NoError(t, os.Chmod(dataDir, 0o777)) // exec tasks run as nobody
	require.NoError(t, os.WriteFile(filepath.Join(certsDir, "seed"), []byte("host cert\n"), 0o644))
	newClientAgentWith(t, "hv-client", fmt.Sprintf(`
  host_volume "app-data" {
    path = %q
  }
  host_volume "app-certs" {
    path      = %q
    read_only = true
  }`, dataDir, certsDir), "", srv.httpHostPort())
	waitReadyNodes(t, c, 1)
	nodes, _, err := c.Nodes().List(nil)
	require.NoError(t, err)
	node, _, err := c.Nodes().Info(nodes[0].ID, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]*api.HostVolumeInfo{
		"app-data":  {Path: dataDir},
		"app-certs": {Path: certsDir, ReadOnly: true},
	}, node.HostVolumes)
	code, out := drover(t, srv.httpAddr(), "node", "status", "-verbose", node.ID)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `(?m)^Host Volumes\nName\s+ReadOnly\s+Source\napp-certs\s+true\s+`+certsDir+`\napp-data\s+false\s+`+dataDir+`$`, out)

	// A volume no node has: nothing is placed, and the failure says why.
	missing := hostVolumeJob("hv-missing", "1")
	missing.TaskGroups[0].Volumes["data"].Source = "nowhere"
	resp, _, err := c.Jobs().Register(missing, nil)
	require.NoError(t, err)
	waitEval(t, c, resp.EvalID)
	eval, _, err := c.Evaluations().Info(resp.EvalID, nil)
	require.NoError(t, err)
	require.Contains(t, eval.FailedTGAllocs, "g")
	require.Equal(t, 1, eval.FailedTGAllocs["g"].ConstraintFiltered["missing compatible host volumes"])
	code, out = drover(t, srv.httpAddr(), "job", "status", "hv-missing")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `Constraint "missing compatible host volumes": 1 node excluded by filter`)
	require.Empty(t, runningAllocs(t, c, "hv-missing"))

	if d := node.Drivers["exec"]; d == nil || !d.Detected || !d.Healthy {
		t.Skipf("SKIPPED the mounts: the exec driver is not usable on this host (euid %d): %+v", os.Geteuid(), d)
	}
	_, _, err = c.Jobs().Register(hostVolumeJob("hv", "1"), nil)
	require.NoError(t, err)
	first := runningAlloc(t, c, "hv", 0)
	catEventually(t, c, first, "alloc/logs/app.stdout.0", "certs=readonly\nseed=host cert\n")
	require.NoFileExists(t, filepath.Join(certsDir, "evil"), "the read-only volume was not written")

	// A destructive update: the replacement finds the data of the first.
	_, _, err = c.Jobs().Register(hostVolumeJob("hv", "2"), nil)
	require.NoError(t, err)
	second := runningAlloc(t, c, "hv", 1)
	require.NotEqual(t, first.ID, second.ID)
	waitFileContent(t, filepath.Join(dataDir, "state"), "1\n2\n", "the replacement appended to the data of the first allocation")
	catEventually(t, c, second, "alloc/logs/app.stdout.0", "certs=readonly\nseed=host cert\n")
}

// TestDynamicHostVolumes: a job asking for a volume that does not exist
// yet is not placed; `volume create` with a host volume spec (plugin
// mkdir) has the client create the directory under its host_volumes_dir;
// the volume is ready and on the node, and the waiting job is placed and
// writes there; `volume delete` is refused while the job runs and, once it
// is stopped, removes the directory and the node's entry.
func TestDynamicHostVolumes(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	hvDir := filepath.Join(t.TempDir(), "hv")
	newClientAgentWith(t, "dhv-client", fmt.Sprintf("host_volumes_dir = %q", hvDir), "", srv.httpHostPort())
	node, withJob := hostVolumeNode(t, c)

	if withJob {
		resp, _, err := c.Jobs().Register(dataVolumeJob("dhv", "scratch"), nil)
		require.NoError(t, err)
		waitEval(t, c, resp.EvalID)
		eval, _, err := c.Evaluations().Info(resp.EvalID, nil)
		require.NoError(t, err)
		require.Equal(t, 1, eval.FailedTGAllocs["g"].ConstraintFiltered["missing compatible host volumes"], "no volume yet")
	}

	id := runVolumeSpec(t, srv, c, "create", `
type      = "host"
name      = "scratch"
plugin_id = "mkdir"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

parameters {
  mode = "0777"
}
`, "==> Created host volume scratch with ID ")
	path := filepath.Join(hvDir, id)
	require.DirExists(t, path)
	node, _, err := c.Nodes().Info(node.ID, nil)
	require.NoError(t, err)
	require.Equal(t, &api.HostVolumeInfo{Path: path, ID: id}, node.HostVolumes["scratch"])
	code, out := drover(t, srv.httpAddr(), "volume", "status")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `scratch\s+default\s+mkdir\s+\S+\s+default\s+ready`, out)

	if withJob {
		// The node's new volume re-runs the blocked evaluation.
		alloc := runningAlloc(t, c, "dhv", 0)
		code, out = drover(t, srv.httpAddr(), "volume", "status", id)
		require.Equal(t, 0, code, out)
		require.Regexp(t, `(?m)^Allocations\n.*\n`+alloc.ID[:8]+`\s`, out, "the volume lists the allocation using it")
		volumeInUse(t, srv, c, id, path, "dhv")
	}
	require.Contains(t, deleteVolume(t, srv, id), "Successfully deleted volume")
	require.Eventually(t, func() bool {
		_, err := os.Stat(path)
		n, _, nerr := c.Nodes().Info(node.ID, nil)
		return os.IsNotExist(err) && nerr == nil && n.HostVolumes["scratch"] == nil
	}, 30*time.Second, 100*time.Millisecond, "the client removed the directory and the node's entry")
}

// TestRegisteredHostVolume: `volume register` makes an existing directory
// of the node a host volume: ready once the client finds it, offered on
// the node under its name at that path, mounted by a job (when the exec
// driver is usable here); `volume delete` is refused while the job runs
// and, once it is stopped, drops the volume and the node's entry but
// leaves the directory and its content.
func TestRegisteredHostVolume(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	newClientAgent(t, "reg-client", srv.httpHostPort())
	node, withJob := hostVolumeNode(t, c)
	dir := filepath.Join(t.TempDir(), "existing")
	require.NoError(t, os.Mkdir(dir, 0o777))
	require.NoError(t, os.Chmod(dir, 0o777))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "seed"), []byte("kept\n"), 0o644))

	id := runVolumeSpec(t, srv, c, "register", fmt.Sprintf(`
type      = "host"
name      = "data"
node_id   = %q
host_path = %q

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`, node.ID, dir), "==> Registered host volume data with ID ")
	node, _, err := c.Nodes().Info(node.ID, nil)
	require.NoError(t, err)
	require.Equal(t, &api.HostVolumeInfo{Path: dir, ID: id}, node.HostVolumes["data"])

	if withJob {
		_, _, err := c.Jobs().Register(dataVolumeJob("regvol", "data"), nil)
		require.NoError(t, err)
		runningAlloc(t, c, "regvol", 0)
		volumeInUse(t, srv, c, id, dir, "regvol")
	}
	deleteVolume(t, srv, id)
	require.Eventually(t, func() bool {
		n, _, err := c.Nodes().Info(node.ID, nil)
		return err == nil && n.HostVolumes["data"] == nil
	}, 30*time.Second, 100*time.Millisecond, "the node no longer offers it")
	b, err := os.ReadFile(filepath.Join(dir, "seed"))
	require.NoError(t, err, "the directory is left in place")
	require.Equal(t, "kept\n", string(b))
}
