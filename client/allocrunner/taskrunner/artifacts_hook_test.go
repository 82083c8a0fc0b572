package taskrunner

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/allocrunner/allocdir"
	"github.com/drover-project/drover/client/allocrunner/taskrunner/getter"
	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// artifactRunner runs task (driver mock) with the artifact settings cfg and
// the restart policy policy; changed receives a value on every state change.
func artifactRunner(t *testing.T, task *structs.Task, cfg *getter.Config, policy *structs.RestartPolicy) (*TaskRunner, *allocdir.AllocDir, <-chan struct{}) {
	t.Helper()
	dir, err := allocdir.New(t.TempDir(), "a1")
	require.NoError(t, err)
	require.NoError(t, dir.Build([]string{task.Name}))
	alloc := testAlloc(task)
	alloc.Job.Type = structs.JobTypeBatch
	alloc.Job.TaskGroups[0].RestartPolicy = policy
	changed := make(chan struct{}, 1)
	tr, err := New(&Config{
		Alloc: alloc, TaskName: task.Name, Driver: mock.New(nil), AllocDir: dir, StateDB: newFakeDB(),
		Node:     &structs.Node{ID: "n1", Name: "node-1", Datacenter: "dc1"},
		Artifact: cfg,
		OnStateChange: func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		tr.Kill(nil)
		<-runDone(tr)
	})
	return tr, dir, changed
}

// waitState waits on state changes until cond holds of the task's state.
func waitState(t *testing.T, tr *TaskRunner, changed <-chan struct{}, cond func(*structs.TaskState) bool) *structs.TaskState {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if st := tr.State(); cond(st) {
			return st
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("condition not reached; events: %v", types(tr.State()))
		}
	}
}

func hasEventType(typ string) func(*structs.TaskState) bool {
	return func(st *structs.TaskState) bool { return slices.Contains(types(st), typ) }
}

func isDead(st *structs.TaskState) bool { return st.State == StateDead }

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestArtifactsHook_FetchesBeforeStart(t *testing.T) {
	body := []byte("config for job-name\n")
	var gotHeader atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHeader.Store(r.Header.Get("X-Job"))
		if r.URL.Path != "/job-name/app.conf" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	task := &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{"run_for": "1ms"},
		Artifacts: []*structs.TaskArtifact{{
			GetterSource:  srv.URL + "/${NOMAD_JOB_NAME}/app.conf",
			GetterOptions: map[string]string{"checksum": sum(body)},
			GetterHeaders: map[string]string{"X-Job": "${NOMAD_META_owner}"},
			GetterMode:    structs.GetterModeAny,
			RelativeDest:  "local/${NOMAD_TASK_NAME}",
		}}}
	tr, dir, changed := artifactRunner(t, task, nil, &structs.RestartPolicy{Mode: "fail"})
	go tr.Run()
	st := waitState(t, tr, changed, isDead)
	assert.False(t, st.Failed, "events: %v", types(st))
	evs := types(st)
	dl, started := slices.Index(evs, EventDownloadingArtifacts), slices.Index(evs, EventStarted)
	require.GreaterOrEqual(t, dl, 0, "events: %v", evs)
	assert.Less(t, dl, started, "downloaded before the start: %v", evs)
	assert.Equal(t, "Client is downloading artifacts", st.Events[dl].DisplayMessage)
	got, err := os.ReadFile(filepath.Join(dir.TaskDir("web").LocalDir, "web", "app.conf"))
	require.NoError(t, err)
	assert.Equal(t, string(body), string(got))
	assert.Equal(t, "ops", gotHeader.Load(), "headers are interpolated")
}

func TestArtifactsHook_BadChecksumFailsWithEvent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("not what was promised"))
	}))
	defer srv.Close()
	task := &structs.Task{Name: "web", Driver: "mock", Artifacts: []*structs.TaskArtifact{{
		GetterSource:  srv.URL + "/app.bin",
		GetterOptions: map[string]string{"checksum": sum([]byte("the real thing"))},
		RelativeDest:  "local/",
	}}}
	tr, _, changed := artifactRunner(t, task, nil, &structs.RestartPolicy{Attempts: 0, Mode: "fail"})
	go tr.Run()
	st := waitState(t, tr, changed, isDead)
	require.True(t, st.Failed)
	evs := types(st)
	assert.NotContains(t, evs, EventStarted)
	i := slices.Index(evs, EventArtifactDownloadFailed)
	require.GreaterOrEqual(t, i, 0, "events: %v", evs)
	ev := st.Events[i]
	assert.Contains(t, ev.DownloadError, `failed to download artifact "`+srv.URL+`/app.bin"`)
	assert.Contains(t, ev.DownloadError, "Checksums did not match")
	assert.Equal(t, ev.DownloadError, ev.Details[DetailDownloadError])
	assert.Equal(t, EventNotRestarting, evs[len(evs)-1])
}

// TestArtifactsHook_RestartPolicyRetries: a failed download is retried
// after the restart policy's delay, and the task starts once it succeeds.
func TestArtifactsHook_RestartPolicyRetries(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready"))
	}))
	defer srv.Close()
	task := &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{"run_for": "1ms"},
		Artifacts: []*structs.TaskArtifact{{GetterSource: srv.URL + "/ready.txt", RelativeDest: "local/"}}}
	tr, dir, changed := artifactRunner(t, task, nil,
		&structs.RestartPolicy{Attempts: 2, Interval: time.Hour, Delay: 10 * time.Millisecond, Mode: "fail"})
	go tr.Run()
	st := waitState(t, tr, changed, isDead)
	assert.False(t, st.Failed, "events: %v", types(st))
	evs := types(st)
	assert.Equal(t, []string{EventArtifactDownloadFailed, EventRestarting, EventDownloadingArtifacts, EventStarted},
		evs[slices.Index(evs, EventArtifactDownloadFailed):slices.Index(evs, EventStarted)+1])
	assert.Contains(t, st.Events[slices.Index(evs, EventArtifactDownloadFailed)].DownloadError, "bad response code: 503")
	assert.Equal(t, uint64(1), st.Restarts)
	got, err := os.ReadFile(filepath.Join(dir.TaskDir("web").LocalDir, "ready.txt"))
	require.NoError(t, err)
	assert.Equal(t, "ready", string(got))
}

func TestArtifactsHook_HTTPMaxSizeFails(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(make([]byte, 2048))
	}))
	defer srv.Close()
	cfg := getter.DefaultConfig()
	cfg.HTTPMaxSize = 1000
	task := &structs.Task{Name: "web", Driver: "mock", Artifacts: []*structs.TaskArtifact{{GetterSource: srv.URL + "/big", RelativeDest: "local/"}}}
	tr, _, changed := artifactRunner(t, task, cfg, &structs.RestartPolicy{Mode: "fail"})
	go tr.Run()
	st := waitState(t, tr, changed, isDead)
	require.True(t, st.Failed)
	i := slices.Index(types(st), EventArtifactDownloadFailed)
	require.GreaterOrEqual(t, i, 0, "events: %v", types(st))
	assert.Contains(t, st.Events[i].DownloadError, "http_max_size of 1000 bytes")
}

func TestArtifactsHook_DestinationSymlinkEscapeFails(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("x")) }))
	defer srv.Close()
	task := &structs.Task{Name: "web", Driver: "mock", Artifacts: []*structs.TaskArtifact{{GetterSource: srv.URL + "/f", RelativeDest: "local/link/"}}}
	tr, dir, changed := artifactRunner(t, task, nil, &structs.RestartPolicy{Mode: "fail"})
	outside := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(dir.TaskDir("web").LocalDir, "link")))
	go tr.Run()
	st := waitState(t, tr, changed, isDead)
	require.True(t, st.Failed)
	i := slices.Index(types(st), EventArtifactDownloadFailed)
	require.GreaterOrEqual(t, i, 0, "events: %v", types(st))
	assert.Contains(t, st.Events[i].DownloadError, "artifact destination path escapes the alloc directory")
	entries, _ := os.ReadDir(outside)
	assert.Empty(t, entries)
}

func TestArtifactsHook_NoArtifactsNoEvent(t *testing.T) {
	tr, _, changed := artifactRunner(t, &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{"run_for": "1ms"}}, nil, &structs.RestartPolicy{Mode: "fail"})
	go tr.Run()
	st := waitState(t, tr, changed, isDead)
	assert.NotContains(t, types(st), EventDownloadingArtifacts)
}
