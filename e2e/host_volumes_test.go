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
	var eval *api.Evaluation
	require.Eventually(t, func() bool {
		eval, _, err = c.Evaluations().Info(resp.EvalID, nil)
		return err == nil && eval.Status == "complete"
	}, 30*time.Second, 100*time.Millisecond)
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
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(dataDir, "state"))
		return string(b) == "1\n2\n"
	}, 30*time.Second, 100*time.Millisecond, "the replacement appended to the data of the first allocation")
	catEventually(t, c, second, "alloc/logs/app.stdout.0", "certs=readonly\nseed=host cert\n")
}
