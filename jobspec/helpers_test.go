package jobspec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// jobFile is the file name used for test jobspecs; error positions start with it.
const jobFile = "job.nomad.hcl"

// writeJob writes src as jobFile into a fresh temp dir and returns its path.
func writeJob(t *testing.T, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), jobFile)
	require.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	return path
}

// mustParse parses src (as a file in a temp dir) and fails the test on error.
func mustParse(t *testing.T, src string, opts ...Options) *api.Job {
	t.Helper()
	job, err := parseSrc(t, src, opts...)
	require.NoError(t, err)
	require.NotNil(t, job)
	return job
}

// parseSrc parses src as a file in a temp dir.
func parseSrc(t *testing.T, src string, opts ...Options) (*api.Job, error) {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	return ParseFile(writeJob(t, src), o)
}

// wrapTask embeds task body lines into a minimal job with group "g" and task "t".
func wrapTask(body string) string {
	return "job \"j\" {\n  group \"g\" {\n    task \"t\" {\n" + body + "\n    }\n  }\n}\n"
}

// wrapGroup embeds group body lines into a minimal job with group "g".
func wrapGroup(body string) string {
	return "job \"j\" {\n  group \"g\" {\n" + body + "\n  }\n}\n"
}

// onlyTask returns the single task of the single group.
func onlyTask(t *testing.T, job *api.Job) *api.Task {
	t.Helper()
	require.Len(t, job.TaskGroups, 1)
	require.Len(t, job.TaskGroups[0].Tasks, 1)
	return job.TaskGroups[0].Tasks[0]
}

func ptr[T any](v T) *T { return &v }
