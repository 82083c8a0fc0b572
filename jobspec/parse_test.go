package jobspec

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

func TestParse_TopLevelJob(t *testing.T) {
	cases := []struct {
		name     string
		src      string
		wantID   string
		wantName string
	}{
		{"label sets id and name", `job "web" {}`, "web", "web"},
		{"explicit name kept", `job "web" { name = "Web Server" }`, "web", "Web Server"},
		{"comments and blank lines", "# c\n\njob \"x\" {\n}\n", "x", "x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := mustParse(t, tc.src)
			require.Equal(t, tc.wantID, *job.ID)
			require.Equal(t, tc.wantName, *job.Name)
		})
	}
}

func TestParse_NotCanonicalized(t *testing.T) {
	job := mustParse(t, wrapTask(`driver = "raw_exec"`))
	require.Nil(t, job.Type)
	require.Nil(t, job.Priority)
	require.Nil(t, job.Region)
	require.Nil(t, job.TaskGroups[0].Count)
	require.Nil(t, job.TaskGroups[0].Tasks[0].Resources)
}

func TestParse_JobLevelTaskBecomesGroup(t *testing.T) {
	job := mustParse(t, `
job "j" {
  group "explicit" {
    task "a" { driver = "exec" }
  }
  task "solo" {
    driver = "raw_exec"
    config { command = "/bin/true" }
  }
}`)
	require.Len(t, job.TaskGroups, 2)
	require.Equal(t, "explicit", *job.TaskGroups[0].Name)
	solo := job.TaskGroups[1]
	require.Equal(t, "solo", *solo.Name)
	require.Len(t, solo.Tasks, 1)
	require.Equal(t, "solo", solo.Tasks[0].Name)
	require.Equal(t, "raw_exec", solo.Tasks[0].Driver)
	require.Equal(t, map[string]any{"command": "/bin/true"}, solo.Tasks[0].Config)
}

func TestParse_TestdataWeb(t *testing.T) {
	job, err := ParseFile(filepath.Join("testdata", "web.nomad.hcl"), Options{})
	require.NoError(t, err)
	require.Equal(t, "web", *job.ID)
	require.Equal(t, "system", *job.Type)
	require.Equal(t, []string{"dc1"}, job.Datacenters)
	require.Equal(t, "${attr.kernel.name}", job.Constraints[0].LTarget)
	require.Equal(t, 1, *job.Update.Canary)
	require.Equal(t, 10*time.Second, *job.Update.MinHealthyTime)

	tg := job.TaskGroups[0]
	require.Equal(t, []api.Port{{Label: "http", Value: 8080}}, tg.Networks[0].ReservedPorts)
	require.Empty(t, tg.Networks[0].DynamicPorts)
	svc := tg.Services[0]
	require.Equal(t, "web-8080", svc.Name)
	require.Equal(t, []string{"web", "${node.unique.name}"}, svc.Tags)
	require.Equal(t, "http", svc.Checks[0].Type)
	require.Equal(t, 10*time.Second, svc.Checks[0].Interval)

	task := tg.Tasks[0]
	require.Equal(t, "raw_exec", task.Driver)
	require.Equal(t, []any{"-m", "http.server", "${NOMAD_PORT_http}", "--directory", "${NOMAD_ALLOC_DIR}/www"},
		task.Config["args"])
	require.Equal(t, "${attr.unique.network.ip-address}:${NOMAD_PORT_http}", task.Env["LISTEN_ADDR"])
	require.Equal(t, 20*time.Second, *task.KillTimeout)

	// Variables from the CLI override the defaults.
	job, err = ParseFile(filepath.Join("testdata", "web.nomad.hcl"), Options{
		ArgVars: []string{"http_port=9090", `datacenters=["eu1","eu2"]`},
	})
	require.NoError(t, err)
	require.Equal(t, []string{"eu1", "eu2"}, job.Datacenters)
	require.Equal(t, 9090, job.TaskGroups[0].Networks[0].ReservedPorts[0].Value)
	require.Equal(t, "web-9090", job.TaskGroups[0].Services[0].Name)
}

func TestParse_TestdataSysbatch(t *testing.T) {
	job, err := ParseFile(filepath.Join("testdata", "cleanup.nomad.hcl"), Options{})
	require.NoError(t, err)
	require.Equal(t, "sysbatch", *job.Type)
	require.Equal(t, []string{"dc1", "dc2"}, job.Datacenters)
	require.Equal(t, &api.Constraint{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}, job.Constraints[0])
	tg := job.TaskGroups[0]
	require.Equal(t, 0, *tg.ReschedulePolicy.Attempts)
	require.False(t, *tg.ReschedulePolicy.Unlimited)
	task := tg.Tasks[0]
	require.Equal(t, []any{"-c", "find /tmp -mtime +7 -delete; echo done on ${node.unique.name}"}, task.Config["args"])
	require.Equal(t, 2, *task.LogConfig.MaxFiles)
	require.Equal(t, 5, *task.LogConfig.MaxFileSizeMB)
}

// TestParse_CanonicalizeMergesJobUpdate proves the parser's output is
// canonicalizable: the server-side Canonicalize merges the job-level update
// block into each group (the parser itself leaves groups alone).
func TestParse_CanonicalizeMergesJobUpdate(t *testing.T) {
	job := mustParse(t, `
job "j" {
  update {
    max_parallel = 2
    canary       = 1
    stagger      = "20s"
  }
  group "inherit" {
    task "t" { driver = "exec" }
  }
  group "override" {
    update { min_healthy_time = "30s" }
    task "t" { driver = "exec" }
  }
}`)
	require.Nil(t, job.TaskGroups[0].Update, "parser must not merge")
	job.Canonicalize()

	inherit := job.TaskGroups[0].Update
	require.Equal(t, 2, *inherit.MaxParallel)
	require.Equal(t, 1, *inherit.Canary)
	require.Equal(t, 20*time.Second, *inherit.Stagger)
	require.Equal(t, "checks", *inherit.HealthCheck) // default filled by Canonicalize

	override := job.TaskGroups[1].Update
	require.Equal(t, 2, *override.MaxParallel)
	require.Equal(t, 30*time.Second, *override.MinHealthyTime)
}

func TestParseFile_Stdin(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	_, err = w.WriteString(`job "from-stdin" { type = "system" }`)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	old := os.Stdin
	os.Stdin = r
	t.Cleanup(func() { os.Stdin = old })

	job, err := ParseFile("-", Options{})
	require.NoError(t, err)
	require.Equal(t, "from-stdin", *job.ID)
	require.Equal(t, "system", *job.Type)
}

func TestParseFile_Missing(t *testing.T) {
	_, err := ParseFile(filepath.Join(t.TempDir(), "nope.hcl"), Options{})
	require.ErrorContains(t, err, "reading jobspec")
}
