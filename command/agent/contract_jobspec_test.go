package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/jobspec"
)

// TestContractJobsParseDefaults: /v1/jobs/parse answers what Nomad's parser
// sends: "=" for a constraint or affinity without operator, weight 50 for
// an affinity without weight, a group's vault block on its tasks without
// one; and the server accepts that job's constraints and affinities.
func TestContractJobsParseDefaults(t *testing.T) {
	ta := newTestAgent(t, "")
	jobs := ta.client.Jobs()
	job, err := jobs.ParseHCL(`job "web" {
  datacenters = ["dc1"]
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  affinity {
    attribute = "${node.datacenter}"
    value     = "dc1"
  }
  group "web" {
    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
    }
  }
}`, false)
	require.NoError(t, err)
	require.Equal(t, []*api.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}}, job.Constraints)
	require.Equal(t, []*api.Affinity{{LTarget: "${node.datacenter}", RTarget: "dc1", Operand: "=", Weight: new(int8(50))}}, job.Affinities)

	res, _, err := jobs.Validate(job, nil)
	require.NoError(t, err)
	require.Empty(t, res.Error, "the parsed job is valid")

	vaulted, err := jobs.ParseHCL(`job "v" {
  group "g" {
    vault {
      policies = ["app"]
    }
    task "a" {
      driver = "raw_exec"
    }
    task "b" {
      driver = "raw_exec"
      vault {
        role = "b"
      }
    }
  }
}`, false)
	require.NoError(t, err)
	tasks := vaulted.TaskGroups[0].Tasks
	require.Equal(t, []string{"app"}, tasks[0].Vault.Policies)
	require.Equal(t, "b", tasks[1].Vault.Role)
	require.Empty(t, tasks[1].Vault.Policies, "a task's own vault block is not merged with the group's")
}

// TestContractCorpusConstraintsAccepted: every job of the jobspec corpus,
// parsed as Drover's CLI parses it, has constraints and affinities the
// server accepts. (Other blocks of the corpus may be refused: that is the
// server's verdict on them, logged here, not this test's subject.)
func TestContractCorpusConstraintsAccepted(t *testing.T) {
	ta := newTestAgent(t, "")
	corpus, err := filepath.Abs(filepath.Join("..", "..", "jobspec", "testdata", "corpus"))
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(corpus, "*.nomad.hcl"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	t.Chdir(corpus) // file() paths of the corpus are relative to it
	checked := 0
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".nomad.hcl")
		if _, err := os.Stat(name + ".json"); err != nil {
			continue // a file the parser refuses, or one needing options
		}
		if _, err := os.Stat(name + ".options.json"); err == nil {
			continue
		}
		job, err := jobspec.ParseFile(filepath.Base(f), jobspec.Options{})
		require.NoError(t, err, name)
		res, _, err := ta.client.Jobs().Validate(job, nil)
		if err != nil {
			t.Logf("%s: refused: %v", name, err)
			require.NotContains(t, err.Error(), "constraint: ", name)
			require.NotContains(t, err.Error(), "affinity: ", name)
			continue
		}
		if res.Error != "" || res.Warnings != "" {
			t.Logf("%s: errors: %q; warnings: %q", name, res.Error, res.Warnings)
		}
		// The server names a constraint's or affinity's problem so.
		require.NotContains(t, res.Error, "constraint: ", name)
		require.NotContains(t, res.Error, "affinity: ", name)
		checked++
	}
	require.NotZero(t, checked)
}
