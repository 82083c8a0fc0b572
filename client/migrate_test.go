package client

import (
	"archive/tar"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// migratingAlloc is a service allocation of one mock task "t" whose
// group's ephemeral disk migrates.
func migratingAlloc(nodeID string) *api.Allocation {
	a := mockAlloc(nodeID, map[string]any{}) // runs until stopped
	a.Job.Type = ptr("service")
	a.Job.TaskGroups[0].EphemeralDisk = &api.EphemeralDisk{Sticky: ptr(true), Migrate: ptr(true), SizeMB: ptr(300)}
	return a
}

// twoNodes starts two clients of one server, each serving its client API.
func twoNodes(t *testing.T) (srv *fakeServer, a, b *Client, aURL string) {
	t.Helper()
	srv = newFakeServer(t)
	cfgA := testConfig(srv, t.TempDir())
	cfgA.timing.migratePoll = 20 * time.Millisecond
	a = startClient(t, cfgA)
	cfgB := testConfig(srv, t.TempDir())
	cfgB.NodeName = "node-2"
	cfgB.timing.migratePoll = 20 * time.Millisecond
	b = startClient(t, cfgB)
	waitRegistered(t, a)
	waitRegistered(t, b)
	require.NotEqual(t, a.NodeID(), b.NodeID())
	peerA := httptest.NewServer(a.Handler())
	t.Cleanup(peerA.Close)
	return srv, a, b, peerA.URL
}

func snapshotStatus(t *testing.T, base, allocID, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/v1/client/allocation/"+allocID+"/snapshot", nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("X-Nomad-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

func TestMigrateFetchesDataFromThePreviousNode(t *testing.T) {
	srv, a, b, aURL := twoNodes(t)
	prev := migratingAlloc(a.NodeID())
	srv.upsertAlloc(prev)
	require.Eventually(t, func() bool { return srv.clientStatus(prev.ID) == "running" }, waitFor, tick)
	prevDir := filepath.Join(a.cfg.AllocDir(), prev.ID)
	require.NoError(t, os.WriteFile(filepath.Join(prevDir, "alloc", "data", "state"), []byte("42"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(prevDir, "t", "local", "cache"), []byte("warm"), 0o644))
	token := structs.MigrateToken(prev.ID, srv.secretOf(a.NodeID()))

	// Only the migrate token of this allocation opens its snapshot.
	code, _ := snapshotStatus(t, aURL, prev.ID, "")
	require.Equal(t, http.StatusForbidden, code, "no token")
	code, _ = snapshotStatus(t, aURL, prev.ID, srv.secretOf(a.NodeID()))
	require.Equal(t, http.StatusForbidden, code, "the node's secret itself is not a migrate token")
	code, _ = snapshotStatus(t, aURL, prev.ID, structs.MigrateToken(prev.ID, srv.secretOf(b.NodeID())))
	require.Equal(t, http.StatusForbidden, code, "a token keyed by another node's secret")
	code, body := snapshotStatus(t, aURL, prev.ID, token)
	require.Equal(t, http.StatusConflict, code, "the allocation still runs: %s", body)

	// The replacement on node B; the server stops the previous one.
	repl := migratingAlloc(b.NodeID())
	repl.PreviousAllocation = prev.ID
	srv.upsertAllocWithPeer(repl, prevPeer{addr: strings.TrimPrefix(aURL, "http://"), token: token})
	require.Eventually(t, func() bool { // the replacement asks while the previous one runs
		ts := srv.taskState(repl.ID, "t")
		return ts != nil && len(ts.Events) > 0 && ts.Events[len(ts.Events)-1].DisplayMessage == "Migrating data from previous allocation "+prev.ID[:8]
	}, waitFor, tick)
	require.NotEqual(t, "running", srv.clientStatus(repl.ID), "the replacement waits for the previous allocation to stop")
	srv.stopAlloc(prev.ID)
	require.Eventually(t, func() bool { return srv.clientStatus(repl.ID) == "running" }, waitFor, tick)

	replDir := filepath.Join(b.cfg.AllocDir(), repl.ID)
	got, err := os.ReadFile(filepath.Join(replDir, "alloc", "data", "state"))
	require.NoError(t, err)
	require.Equal(t, "42", string(got))
	got, err = os.ReadFile(filepath.Join(replDir, "t", "local", "cache"))
	require.NoError(t, err)
	require.Equal(t, "warm", string(got))
	var msgs []string
	for _, e := range srv.taskState(repl.ID, "t").Events {
		msgs = append(msgs, e.DisplayMessage)
	}
	require.Contains(t, msgs, "Migrated data from previous allocation "+prev.ID[:8])
}

func TestMigrateRefusesAHostilePeer(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	c := startClient(t, cfg)
	waitRegistered(t, c)
	outside := t.TempDir()
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "alloc/data/", Typeflag: tar.TypeDir, Mode: 0o755}))
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "alloc/data/../../../../escaped", Typeflag: tar.TypeReg, Mode: 0o644}))
	require.NoError(t, tw.Close())
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(archive.Bytes())
	}))
	t.Cleanup(hostile.Close)

	repl := migratingAlloc(c.NodeID())
	repl.PreviousAllocation = "0ddba11-0000-4000-8000-000000000000"
	srv.upsertAllocWithPeer(repl, prevPeer{addr: strings.TrimPrefix(hostile.URL, "http://"), token: "whatever"})
	require.Eventually(t, func() bool { return srv.clientStatus(repl.ID) == "failed" }, waitFor, tick)
	ts := srv.taskState(repl.ID, "t")
	require.NotNil(t, ts)
	var failure *api.TaskEvent
	for _, e := range ts.Events {
		if e.Type == "Setup Failure" {
			failure = e
		}
		require.NotEqual(t, "Started", e.Type, "the task never started")
	}
	require.NotNil(t, failure)
	require.Contains(t, failure.DisplayMessage, "refusing the data of previous allocation 0ddba11-")
	require.Contains(t, failure.DisplayMessage, "unsafe archive entry")
	require.NoFileExists(t, filepath.Join(outside, "escaped"))
	require.NoFileExists(t, filepath.Join(filepath.Dir(cfg.AllocDir()), "escaped"))
}

func TestMigrateGivesUpOnAnUnreachablePeer(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.timing.migratePoll = 20 * time.Millisecond
	cfg.timing.migrateGiveUp = 200 * time.Millisecond
	c := startClient(t, cfg)
	waitRegistered(t, c)
	gone := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(gone.URL, "http://")
	gone.Close() // nothing listens there any more

	repl := migratingAlloc(c.NodeID())
	repl.PreviousAllocation = "0ddba11-0000-4000-8000-000000000000"
	srv.upsertAllocWithPeer(repl, prevPeer{addr: addr, token: "whatever"})
	require.Eventually(t, func() bool { return srv.clientStatus(repl.ID) == "running" }, waitFor, tick)
	var msgs []string
	for _, e := range srv.taskState(repl.ID, "t").Events {
		msgs = append(msgs, e.DisplayMessage)
	}
	joined := strings.Join(msgs, "\n")
	require.Contains(t, joined, "Could not migrate data from previous allocation 0ddba11-, starting without it: previous node unreachable for 200ms")
}

func TestMigrateGivesUpOnAStalledPeer(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.timing.migrateIdle = 200 * time.Millisecond
	c := startClient(t, cfg)
	waitRegistered(t, c)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var archive bytes.Buffer
		tw := tar.NewWriter(&archive)
		_ = tw.WriteHeader(&tar.Header{Name: "alloc/data/big", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1 << 20})
		_, _ = w.Write(archive.Bytes()) // a header, then nothing
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(stalled.Close)

	repl := migratingAlloc(c.NodeID())
	repl.PreviousAllocation = "0ddba11-0000-4000-8000-000000000000"
	srv.upsertAllocWithPeer(repl, prevPeer{addr: strings.TrimPrefix(stalled.URL, "http://"), token: "whatever"})
	require.Eventually(t, func() bool { return srv.clientStatus(repl.ID) == "running" }, waitFor, tick)
	var msgs []string
	for _, e := range srv.taskState(repl.ID, "t").Events {
		msgs = append(msgs, e.DisplayMessage)
	}
	require.Contains(t, strings.Join(msgs, "\n"), "previous node sent nothing for 200ms")
	_, err := os.Stat(filepath.Join(cfg.AllocDir(), repl.ID, "alloc", "data", "big"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing of a broken transfer is kept")
}
