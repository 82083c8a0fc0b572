package e2e

import (
	"io"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// stickyDiskJob is a raw_exec service job of one allocation whose task
// appends its VERSION to alloc/data/state and sleeps: the file holds the
// versions of every allocation whose data the current one inherited.
func stickyDiskJob(id, version string, disk *api.EphemeralDisk) *api.Job {
	job := api.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("app", "raw_exec").SetConfig("command", "/bin/sh").
		SetConfig("args", []string{"-c", `echo "$VERSION" >> "$NOMAD_ALLOC_DIR/data/state" && exec sleep 3600`})
	task.Resources = &api.Resources{CPU: new(50), MemoryMB: new(32)}
	task.Env = map[string]string{"VERSION": version} // a new version is a destructive update
	tg := api.NewTaskGroup("g", 1).AddTask(task)
	tg.EphemeralDisk = disk
	job.AddTaskGroup(tg)
	return job
}

// runningAlloc waits for the job's one running allocation of version.
func runningAlloc(t *testing.T, c *api.Client, jobID string, version uint64) *api.Allocation {
	t.Helper()
	var found *api.AllocationListStub
	require.Eventually(t, func() bool {
		for _, a := range runningAllocs(t, c, jobID) {
			if a.JobVersion == version {
				found = a
				return true
			}
		}
		return false
	}, 60*time.Second, 200*time.Millisecond, "job %s version %d never ran", jobID, version)
	a, _, err := c.Allocations().Info(found.ID, nil)
	require.NoError(t, err)
	return a
}

// catEventually reads path in alloc's directory once it has want.
func catEventually(t *testing.T, c *api.Client, alloc *api.Allocation, path, want string) {
	t.Helper()
	var got string
	var readErr error
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		got, readErr = catFile(c, alloc, path)
		if readErr == nil && got == want {
			return
		}
		time.Sleep(200 * time.Millisecond) // polling the API: no event to wait on
	}
	require.NoError(t, readErr, "%s of %s", path, alloc.ID)
	require.Equal(t, want, got, "%s of %s", path, alloc.ID)
}

func catFile(c *api.Client, alloc *api.Allocation, path string) (string, error) {
	rc, err := c.AllocFS().Cat(alloc, path, nil)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return string(b), err
}

// TestStickyDiskKeepsDataAcrossUpdates: with ephemeral_disk sticky, a
// destructive update replaces the allocation on its node and the new task
// finds the old one's alloc/data; with migrate, a replacement that must go
// to another node (its node became ineligible) gets the data from the
// previous node's client.
func TestStickyDiskKeepsDataAcrossUpdates(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	for _, name := range []string{"sticky-1", "sticky-2", "sticky-3"} {
		newClientAgent(t, name, srv.httpHostPort())
	}
	waitReadyNodes(t, c, 3)

	// Sticky: same node, data kept.
	sticky := &api.EphemeralDisk{Sticky: new(true), SizeMB: new(100)}
	_, _, err := c.Jobs().Register(stickyDiskJob("sticky", "1", sticky), nil)
	require.NoError(t, err)
	first := runningAlloc(t, c, "sticky", 0)
	catEventually(t, c, first, "alloc/data/state", "1\n")
	_, _, err = c.Jobs().Register(stickyDiskJob("sticky", "2", sticky), nil)
	require.NoError(t, err)
	second := runningAlloc(t, c, "sticky", 1)
	require.Equal(t, first.ID, second.PreviousAllocation)
	require.Equal(t, first.NodeID, second.NodeID, "a sticky replacement stays on its node")
	catEventually(t, c, second, "alloc/data/state", "1\n2\n")

	// Migrate: the node of the allocation may take no more; its
	// replacement goes elsewhere and the data follows it over the network.
	migrate := &api.EphemeralDisk{Migrate: new(true), SizeMB: new(100)}
	_, _, err = c.Jobs().Register(stickyDiskJob("migrating", "1", migrate), nil)
	require.NoError(t, err)
	m1 := runningAlloc(t, c, "migrating", 0)
	catEventually(t, c, m1, "alloc/data/state", "1\n")
	_, err = c.Nodes().ToggleEligibility(m1.NodeID, false, nil)
	require.NoError(t, err)
	_, _, err = c.Jobs().Register(stickyDiskJob("migrating", "2", migrate), nil)
	require.NoError(t, err)
	m2 := runningAlloc(t, c, "migrating", 1)
	require.Equal(t, m1.ID, m2.PreviousAllocation)
	require.NotEqual(t, m1.NodeID, m2.NodeID, "the previous node is ineligible")
	catEventually(t, c, m2, "alloc/data/state", "1\n2\n")
	var msgs []string
	for _, e := range m2.TaskStates["app"].Events {
		msgs = append(msgs, e.DisplayMessage)
	}
	require.Contains(t, msgs, "Migrated data from previous allocation "+m1.ID[:8])
}
