package apiconv

import (
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestJobFromAPI_Artifacts: artifact blocks are converted with Nomad's
// defaults (mode any, destination local/) and come back as submitted.
func TestJobFromAPI_Artifacts(t *testing.T) {
	j := &api.Job{
		ID: new("fetch"), Type: new("batch"),
		TaskGroups: []*api.TaskGroup{{Name: new("g"), Tasks: []*api.Task{{
			Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"},
			Artifacts: []*api.TaskArtifact{
				{
					GetterSource:  new("https://example.com/app.tar.gz"),
					GetterOptions: map[string]string{"checksum": "sha256:" + sha256Hex},
					GetterHeaders: map[string]string{"X-Token": "${NOMAD_META_token}"},
					Chown:         true,
				},
				{GetterSource: new("https://example.com/conf.json"), GetterMode: new("file")},
			},
		}}}},
	}
	job, warnings, err := JobFromAPI(j)
	require.NoError(t, err)
	assert.Empty(t, warnings)
	require.NoError(t, job.Validate())
	arts := job.TaskGroups[0].Tasks[0].Artifacts
	require.Len(t, arts, 2)
	assert.Equal(t, &structs.TaskArtifact{
		GetterSource:  "https://example.com/app.tar.gz",
		GetterOptions: map[string]string{"checksum": "sha256:" + sha256Hex},
		GetterHeaders: map[string]string{"X-Token": "${NOMAD_META_token}"},
		GetterMode:    structs.GetterModeAny,
		RelativeDest:  "local/",
		Chown:         true,
	}, arts[0])
	assert.Equal(t, "local/conf.json", arts[1].RelativeDest, "file mode defaults to local/<file name>")

	back := JobToAPI(job).TaskGroups[0].Tasks[0].Artifacts
	require.Len(t, back, 2)
	assert.Equal(t, "https://example.com/app.tar.gz", *back[0].GetterSource)
	assert.Equal(t, "local/", *back[0].RelativeDest)
	assert.True(t, back[0].Chown)
	assert.Equal(t, "file", *back[1].GetterMode)
}

const sha256Hex = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
