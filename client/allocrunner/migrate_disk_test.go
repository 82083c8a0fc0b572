package allocrunner

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/allocrunner/allocdir"
	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// seeingDriver is the mock driver, recording what a task finds in its
// allocation's alloc/data/state and local/cache when it starts.
type seeingDriver struct {
	*mock.Driver
	root string

	mu   sync.Mutex
	seen map[string]string // by task ID: "state|cache", "" for a missing file
}

func (d *seeingDriver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	state, _ := os.ReadFile(filepath.Join(d.root, cfg.AllocID, "alloc", "data", "state"))
	cache, _ := os.ReadFile(filepath.Join(d.root, cfg.AllocID, cfg.TaskName, "local", "cache"))
	d.mu.Lock()
	d.seen[cfg.ID] = string(state) + "|" + string(cache)
	d.mu.Unlock()
	return d.Driver.StartTask(cfg)
}

func (d *seeingDriver) sawAtStart(taskID string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.seen[taskID]
	return s, ok
}

// fakePeer stands in for the previous allocation's node.
type fakePeer struct {
	snapshot []byte
	err      error
	calls    int
}

func (f *fakePeer) Fetch(context.Context) (io.ReadCloser, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return io.NopCloser(bytes.NewReader(f.snapshot)), nil
}

func diskJob(disk *structs.EphemeralDisk, version uint64) *structs.Job {
	job := newJob(structs.JobTypeService, mockTask("web", nil))
	job.TaskGroups[0].EphemeralDisk = disk
	job.Version = version
	return job
}

func withSeeingDriver(h *harness) *seeingDriver {
	return &seeingDriver{Driver: h.driver, root: h.root, seen: map[string]string{}}
}

func useDriver(d drivers.Driver) func(*Config) {
	return func(c *Config) { c.Drivers = drivers.Catalog{mock.Name: d} }
}

func TestStickyDiskMovesDataFromLocalPrevious(t *testing.T) {
	for _, tc := range []struct {
		name string
		disk *structs.EphemeralDisk
		want string // what the replacement's task finds at start
	}{
		{"sticky", &structs.EphemeralDisk{Sticky: true}, "42|warm"},
		{"migrate implies sticky", &structs.EphemeralDisk{Migrate: true}, "42|warm"},
		{"neither", &structs.EphemeralDisk{}, "|"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				d := withSeeingDriver(h)
				prevAlloc := newAlloc(diskJob(tc.disk, 1))
				prev := h.runner(prevAlloc, useDriver(d))
				go prev.Run()
				time.Sleep(time.Minute)
				synctest.Wait()
				require.Equal(t, structs.AllocClientStatusRunning, prev.Alloc().ClientStatus)
				// What the previous allocation's task wrote.
				prevDir := filepath.Join(h.root, prevAlloc.ID)
				require.NoError(t, os.WriteFile(filepath.Join(prevDir, "alloc", "data", "state"), []byte("42"), 0o644))
				require.NoError(t, os.WriteFile(filepath.Join(prevDir, "web", "local", "cache"), []byte("warm"), 0o644))

				alloc := newAlloc(diskJob(tc.disk, 2))
				alloc.PreviousAllocation = prevAlloc.ID
				ar := h.runner(alloc, useDriver(d), func(c *Config) { c.PrevAlloc = LocalPrevAlloc(prev) })
				go ar.Run()
				time.Sleep(time.Minute)
				synctest.Wait()

				require.Equal(t, structs.AllocClientStatusRunning, ar.Alloc().ClientStatus)
				require.Equal(t, structs.AllocClientStatusComplete, prev.Alloc().ClientStatus, "the previous allocation stopped first")
				seen, ok := d.sawAtStart(alloc.ID + "/web")
				require.True(t, ok)
				require.Equal(t, tc.want, seen)
				_, err := os.Stat(filepath.Join(prevDir, "alloc", "data", "state"))
				if tc.want == "|" {
					require.NoError(t, err, "without sticky the previous allocation keeps its data")
					for _, m := range setupMessages(taskState(t, ar, "web")) {
						require.NotContains(t, m, "Moved")
					}
				} else {
					require.ErrorIs(t, err, os.ErrNotExist, "moved, not copied, as Nomad does")
					require.Contains(t, setupMessages(taskState(t, ar, "web")),
						"Moved alloc/data, web/local from previous allocation "+prevAlloc.ID[:8])
				}
				ar.Destroy()
				prev.Destroy()
			})
		})
	}
}

func setupMessages(st *structs.TaskState) []string {
	var out []string
	for _, e := range st.Events {
		if e.Type == taskrunner.EventSetup {
			out = append(out, e.DisplayMessage)
		}
	}
	return out
}

// remoteSnapshot is the snapshot another node's client would send.
func remoteSnapshot(t *testing.T) []byte {
	t.Helper()
	src, err := allocdir.New(t.TempDir(), "remote")
	require.NoError(t, err)
	require.NoError(t, src.Build([]string{"web"}))
	require.NoError(t, os.WriteFile(filepath.Join(src.SharedDir(), "data", "state"), []byte("42"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src.TaskDir("web").LocalDir, "cache"), []byte("warm"), 0o644))
	var buf bytes.Buffer
	require.NoError(t, src.WriteSnapshot(&buf, []string{"web"}))
	return buf.Bytes()
}

func hostileSnapshot(t *testing.T, outside string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "alloc/data/", Typeflag: tar.TypeDir, Mode: 0o755}))
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "alloc/data/etc", Typeflag: tar.TypeSymlink, Linkname: outside}))
	body := []byte("pwned")
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "alloc/data/etc/escaped", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}))
	_, err := tw.Write(body)
	require.NoError(t, err)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "alloc/data/../../escaped", Typeflag: tar.TypeReg, Mode: 0o644}))
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func TestMigrateDiskFetchesFromRemotePrevious(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		d := withSeeingDriver(h)
		peer := &fakePeer{snapshot: remoteSnapshot(t)}
		alloc := newAlloc(diskJob(&structs.EphemeralDisk{Sticky: true, Migrate: true}, 2))
		alloc.PreviousAllocation = "0ddba11-on-another-node"
		ar := h.runner(alloc, useDriver(d), func(c *Config) { c.PrevData = peer })
		go ar.Run()
		time.Sleep(time.Minute)
		synctest.Wait()

		require.Equal(t, structs.AllocClientStatusRunning, ar.Alloc().ClientStatus)
		require.Equal(t, 1, peer.calls)
		seen, _ := d.sawAtStart(alloc.ID + "/web")
		require.Equal(t, "42|warm", seen)
		require.Contains(t, setupMessages(taskState(t, ar, "web")), "Migrated data from previous allocation 0ddba11-")
		ar.Destroy()
	})
}

func TestMigrateDiskIsBestEffort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		d := withSeeingDriver(h)
		peer := &fakePeer{err: errors.New("previous node unreachable")}
		alloc := newAlloc(diskJob(&structs.EphemeralDisk{Migrate: true}, 2))
		alloc.PreviousAllocation = "0ddba11-on-another-node"
		ar := h.runner(alloc, useDriver(d), func(c *Config) { c.PrevData = peer })
		go ar.Run()
		time.Sleep(time.Minute)
		synctest.Wait()

		require.Equal(t, structs.AllocClientStatusRunning, ar.Alloc().ClientStatus, "the task starts without the data")
		seen, _ := d.sawAtStart(alloc.ID + "/web")
		require.Equal(t, "|", seen)
		require.Contains(t, setupMessages(taskState(t, ar, "web")),
			"Could not migrate data from previous allocation 0ddba11-, starting without it: previous node unreachable")
		ar.Destroy()
	})
}

func TestMigrateDiskRefusesHostileArchive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		d := withSeeingDriver(h)
		outside := t.TempDir()
		peer := &fakePeer{snapshot: hostileSnapshot(t, outside)}
		alloc := newAlloc(diskJob(&structs.EphemeralDisk{Migrate: true}, 2))
		alloc.PreviousAllocation = "0ddba11-on-another-node"
		ar := h.runner(alloc, useDriver(d), func(c *Config) { c.PrevData = peer })
		go ar.Run()
		<-ar.WaitCh()

		got := ar.Alloc()
		require.Equal(t, structs.AllocClientStatusFailed, got.ClientStatus)
		_, started := d.sawAtStart(alloc.ID + "/web")
		require.False(t, started, "the task never started")
		e := findEvent(got.TaskStates["web"], taskrunner.EventSetupFailure)
		require.NotNil(t, e)
		require.True(t, e.FailsTask)
		require.Contains(t, e.DisplayMessage, "refusing the data of previous allocation 0ddba11-")
		require.Contains(t, e.DisplayMessage, `symlink "alloc/data/etc" -> "`+outside+`" leaves the allocation directory`)
		require.NoFileExists(t, filepath.Join(outside, "escaped"))
		require.NoFileExists(t, filepath.Join(h.root, "escaped"))
		ar.Destroy()
	})
}

func TestStickyWithoutMigrateNeverFetchesRemote(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		peer := &fakePeer{snapshot: remoteSnapshot(t)}
		alloc := newAlloc(diskJob(&structs.EphemeralDisk{Sticky: true}, 2))
		alloc.PreviousAllocation = "0ddba11-on-another-node"
		ar := h.runner(alloc, func(c *Config) { c.PrevData = peer })
		go ar.Run()
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, structs.AllocClientStatusRunning, ar.Alloc().ClientStatus)
		require.Zero(t, peer.calls, "sticky alone keeps data on the same node only")
		ar.Destroy()
	})
}

func TestStickyDiskMovesDataOfAPreviousAllocationWithoutRunner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		d := withSeeingDriver(h)
		// The previous allocation ended before the client restarted: only
		// its directory is left.
		prevID := "0ddba11-0000-4000-8000-000000000000"
		prevDir, err := allocdir.New(h.root, prevID)
		require.NoError(t, err)
		require.NoError(t, prevDir.Build([]string{"web"}))
		require.NoError(t, os.WriteFile(filepath.Join(prevDir.SharedDir(), "data", "state"), []byte("42"), 0o644))
		peer := &fakePeer{err: errors.New("must not be asked")}

		alloc := newAlloc(diskJob(&structs.EphemeralDisk{Migrate: true}, 2))
		alloc.PreviousAllocation = prevID
		ar := h.runner(alloc, useDriver(d), func(c *Config) { c.PrevData = peer })
		go ar.Run()
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, structs.AllocClientStatusRunning, ar.Alloc().ClientStatus)
		seen, _ := d.sawAtStart(alloc.ID + "/web")
		require.Equal(t, "42|", seen)
		require.Zero(t, peer.calls, "data on this node is moved, not fetched")
		ar.Destroy()
	})
}

// TestStickyDiskSkipsAFailedReplacement: v2's prepare failed, so v1 ran on
// with the data; v3, replacing v2, takes v1's data.
func TestStickyDiskSkipsAFailedReplacement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		d := withSeeingDriver(h)
		disk := &structs.EphemeralDisk{Sticky: true}
		v1 := newAlloc(diskJob(disk, 1))
		r1 := h.runner(v1, useDriver(d))
		go r1.Run()
		time.Sleep(time.Minute)
		synctest.Wait()
		require.NoError(t, os.WriteFile(filepath.Join(h.root, v1.ID, "alloc", "data", "state"), []byte("42"), 0o644))

		bad := diskJob(disk, 2)
		bad.TaskGroups[0].Tasks[0].Config = map[string]any{"prepare_for": "1s", "prepare_error": "manifest unknown"}
		v2 := newAlloc(bad)
		v2.PreviousAllocation = v1.ID
		r2 := h.runner(v2, useDriver(d), func(c *Config) { c.PrevAlloc = LocalPrevAlloc(r1) })
		go r2.Run()
		<-r2.WaitCh()
		require.Equal(t, structs.AllocClientStatusFailed, r2.Alloc().ClientStatus)
		require.Equal(t, structs.AllocClientStatusRunning, r1.Alloc().ClientStatus, "a failed prepare never stops the previous allocation")

		// The server stops v1 and v2 and places v3; the client stops v2,
		// which releases v1's held stop.
		v3 := newAlloc(diskJob(disk, 3))
		v3.PreviousAllocation = v2.ID
		r3 := h.runner(v3, useDriver(d), func(c *Config) { c.PrevAlloc = LocalPrevAlloc(r2) })
		stop := func(a *structs.Allocation) *structs.Allocation {
			c := a.Copy()
			c.DesiredStatus = structs.AllocDesiredStatusStop
			c.AllocModifyIndex++
			return c
		}
		r1.Update(stop(v1))
		r2.Update(stop(v2))
		go r3.Run()
		time.Sleep(time.Minute)
		synctest.Wait()

		require.Equal(t, structs.AllocClientStatusRunning, r3.Alloc().ClientStatus)
		require.Equal(t, structs.AllocClientStatusComplete, r1.Alloc().ClientStatus)
		seen, _ := d.sawAtStart(v3.ID + "/web")
		require.Equal(t, "42|", seen, "the data of the allocation that last ran")
		r3.Destroy()
		r2.Destroy()
		r1.Destroy()
	})
}
