package apiconv

import (
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestJobJSON: the cached encoding is JobToAPI's, is made once per job
// object, and is dropped when the job object is freed.
func TestJobJSON(t *testing.T) {
	raw, err := JobJSON(nil)
	require.NoError(t, err)
	require.JSONEq(t, "null", string(raw))

	before := jobJSONEntries()
	job := &structs.Job{ID: "web", Namespace: "default", Type: structs.JobTypeSystem, Version: 3,
		TaskGroups: []*structs.TaskGroup{{Name: "web", Count: 1, Tasks: []*structs.Task{{Name: "server", Driver: "mock",
			Config: map[string]any{"run_for": "10s"}}}}}}
	raw, err = JobJSON(job)
	require.NoError(t, err)
	want, err := json.Marshal(JobToAPI(job))
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(raw))
	again, err := JobJSON(job)
	require.NoError(t, err)
	require.Same(t, &raw[0], &again[0], "the second call answers from the cache")

	other := *job
	other.Version = 4
	raw4, err := JobJSON(&other)
	require.NoError(t, err)
	require.NotEqual(t, string(raw), string(raw4), "another job object is encoded on its own")
	require.Equal(t, before+2, jobJSONEntries())

	runtime.KeepAlive(job)
	runtime.KeepAlive(&other)
	job = nil
	require.Eventually(t, func() bool {
		runtime.GC()
		return jobJSONEntries() == before
	}, 5*time.Second, 10*time.Millisecond, "entries go with their jobs")
}
