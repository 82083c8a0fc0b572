package allocrunner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/allocrunner/allocdir"
	"github.com/drover-project/drover/nomad/structs"
)

func TestDispatchPayloadHook(t *testing.T) {
	dir, err := allocdir.New(t.TempDir(), "a1")
	require.NoError(t, err)
	require.NoError(t, dir.Build([]string{"render", "plain"}))
	job := &structs.Job{ID: "r/dispatch-1-abcdef01", Dispatched: true, Payload: []byte("scene: castle\n"),
		TaskGroups: []*structs.TaskGroup{{Name: "g", Tasks: []*structs.Task{
			{Name: "render", DispatchPayload: &structs.DispatchPayloadConfig{File: "in/scene.yaml"}},
			{Name: "plain"},
		}}}}
	h := &dispatchPayloadHook{dir: dir, alloc: &structs.Allocation{ID: "a1", TaskGroup: "g", Job: job}}
	require.NoError(t, h.Prerun(context.Background(), &PrerunRequest{}))
	require.NoError(t, h.Prerun(context.Background(), &PrerunRequest{Restored: true}), "idempotent")
	got, err := os.ReadFile(filepath.Join(dir.TaskDir("render").LocalDir, "in", "scene.yaml"))
	require.NoError(t, err)
	require.Equal(t, "scene: castle\n", string(got))
	entries, err := os.ReadDir(dir.TaskDir("plain").LocalDir)
	require.NoError(t, err)
	require.Empty(t, entries, "a task without dispatch_payload gets no file")

	// A file that would escape the local directory is refused.
	job.TaskGroups[0].Tasks[0].DispatchPayload.File = "../../outside"
	require.ErrorContains(t, h.Prerun(context.Background(), &PrerunRequest{}), "escapes the task's local directory")
	_, err = os.Stat(filepath.Join(dir.Dir(), "outside"))
	require.True(t, os.IsNotExist(err))
}
