package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// TestArtifactsFetchedBeforeTheTaskStarts: a real client, with an
// artifact { http_max_size } block, fetches a job's artifacts from an HTTP
// server the test runs (a tar.gz checked by sha256 and unpacked, a file
// named through interpolation) before its raw_exec task starts, and the
// task reads them. A second job whose artifact is over http_max_size fails
// with "Failed Artifact Download" naming the limit, never started.
func TestArtifactsFetchedBeforeTheTaskStarts(t *testing.T) {
	version := "tool 1.4.2\n"
	archive := tarGz(t, map[string]string{"bin/VERSION": version})
	sum := sha256.Sum256(archive)
	files := map[string][]byte{
		"/tool.tar.gz":          archive,
		"/conf/fetch-demo.conf": []byte("greeting = hello\n"),
		"/big.bin":              make([]byte, 4096),
		"/escape.tar.gz":        tarGz(t, map[string]string{"../../escaped-by-archive": "x"}),
	}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	defer web.Close()

	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	cl := newClientAgentWith(t, "client-1", "artifact {\n    http_max_size = \"1KiB\"\n  }", "", srv.httpHostPort())
	waitReadyNodes(t, c, 1)

	job := artifactJob("fetch-demo", "cat ${NOMAD_TASK_DIR}/tool/bin/VERSION ${NOMAD_TASK_DIR}/fetch-demo.conf",
		&api.TaskArtifact{
			GetterSource:  new(web.URL + "/tool.tar.gz"),
			GetterOptions: map[string]string{"checksum": "sha256:" + hex.EncodeToString(sum[:])},
			RelativeDest:  new("local/tool"),
		},
		&api.TaskArtifact{GetterSource: new(web.URL + "/conf/${NOMAD_JOB_NAME}.conf")},
	)
	_, _, err := c.Jobs().Register(job, nil)
	require.NoError(t, err)
	a := waitAllocStatus(t, c, cl, "fetch-demo", "complete")
	require.Equal(t, version+"greeting = hello\n", taskStdout(t, c, a, "main"))
	require.Contains(t, eventTypes(a.TaskStates["main"]), "Downloading Artifacts")

	_, _, err = c.Jobs().Register(artifactJob("too-big", "true", &api.TaskArtifact{GetterSource: new(web.URL + "/big.bin")}), nil)
	require.NoError(t, err)
	a = waitAllocStatus(t, c, cl, "too-big", "failed")
	st := a.TaskStates["main"]
	require.True(t, st.StartedAt.IsZero(), "never started: %v", eventTypes(st))
	var failed *api.TaskEvent
	for _, e := range st.Events {
		if e.Type == "Failed Artifact Download" {
			failed = e
		}
	}
	require.NotNil(t, failed, "events: %v", eventTypes(st))
	require.Contains(t, failed.DownloadError, "http_max_size of 1024 bytes")
	require.Contains(t, failed.DisplayMessage, "http_max_size of 1024 bytes")

	// A checksum the download does not match fails the task before it
	// starts, with the event.
	bad := sha256.Sum256([]byte("something else"))
	_, _, err = c.Jobs().Register(artifactJob("bad-sum", "true", &api.TaskArtifact{
		GetterSource:  new(web.URL + "/tool.tar.gz"),
		GetterOptions: map[string]string{"checksum": "sha256:" + hex.EncodeToString(bad[:])},
	}), nil)
	require.NoError(t, err)
	requireArtifactFailed(t, waitAllocStatus(t, c, cl, "bad-sum", "failed"), "Checksums did not match")

	// An archive with an entry climbing out of its destination fails the
	// task, and nothing is written outside.
	_, _, err = c.Jobs().Register(artifactJob("escape", "true", &api.TaskArtifact{GetterSource: new(web.URL + "/escape.tar.gz")}), nil)
	require.NoError(t, err)
	a = waitAllocStatus(t, c, cl, "escape", "failed")
	requireArtifactFailed(t, a, "entry contains '..'")
	_, err = os.Stat(filepath.Join(cl.dataDir, "alloc", a.ID, "escaped-by-archive"))
	require.ErrorIs(t, err, os.ErrNotExist, "the archive's ../ entry was not written")
	_, err = os.Stat(filepath.Join(cl.dataDir, "alloc", "escaped-by-archive"))
	require.ErrorIs(t, err, os.ErrNotExist, "the archive's ../ entry was not written")

	// A destination outside the allocation directory is refused at
	// registration.
	_, _, err = c.Jobs().Register(artifactJob("outside", "true", &api.TaskArtifact{
		GetterSource: new(web.URL + "/big.bin"), RelativeDest: new("../../../etc/x"),
	}), nil)
	require.ErrorContains(t, err, "destination escapes allocation directory")
}

// requireArtifactFailed checks that the allocation's task never started
// and has a "Failed Artifact Download" event whose error contains want.
func requireArtifactFailed(t *testing.T, a *api.Allocation, want string) {
	t.Helper()
	st := a.TaskStates["main"]
	require.True(t, st.StartedAt.IsZero(), "never started: %v", eventTypes(st))
	for _, e := range st.Events {
		if e.Type == "Failed Artifact Download" {
			require.Contains(t, e.DownloadError, want)
			return
		}
	}
	t.Fatalf("no Failed Artifact Download event: %v", eventTypes(st))
}

// artifactJob is a batch job of one raw_exec task "main" running script
// with sh, with artifacts and no restarts.
func artifactJob(id, script string, artifacts ...*api.TaskArtifact) *api.Job {
	job := api.NewBatchJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("main", "raw_exec").
		SetConfig("command", "/bin/sh").
		SetConfig("args", []string{"-c", script})
	task.Artifacts = artifacts
	task.Resources = &api.Resources{CPU: new(100), MemoryMB: new(64)}
	tg := api.NewTaskGroup("g", 1).AddTask(task)
	tg.RestartPolicy = &api.RestartPolicy{Attempts: new(0), Mode: new("fail")}
	tg.ReschedulePolicy = &api.ReschedulePolicy{Attempts: new(0), Unlimited: new(false)}
	job.AddTaskGroup(tg)
	return job
}

// waitAllocStatus waits until the job's one allocation has the client
// status want and returns it.
func waitAllocStatus(t *testing.T, c *api.Client, cl *agentProc, jobID, want string) *api.Allocation {
	t.Helper()
	id := onlyAllocOf(t, c, jobID)
	var a *api.Allocation
	require.Eventually(t, func() bool {
		var err error
		a, _, err = c.Allocations().Info(id, nil)
		return err == nil && a.ClientStatus == want
	}, 60*time.Second, 100*time.Millisecond, "allocation of %s is not %s\n%s", jobID, want, lastLines(cl.logs(), 30))
	return a
}

func eventTypes(st *api.TaskState) []string {
	var out []string
	if st == nil {
		return out
	}
	for _, e := range st.Events {
		out = append(out, e.Type)
	}
	return out
}
