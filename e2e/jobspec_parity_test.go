package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// jspParityJobHCL is written the way real job files are: constraint and
// affinity without operator, a file() read relative to where the CLI runs.
const jspParityJobHCL = `job "jsp-parity" {
  datacenters = ["dc1"]
  type        = "batch"

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  affinity {
    attribute = "${node.datacenter}"
    value     = "dc1"
  }

  meta {
    motd = trimspace(file("motd.txt"))
  }

  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
    }
  }
}
`

// droverIn runs the CLI in dir against addr.
func droverIn(t *testing.T, dir, addr string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(droverBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+addr)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err)
	return 0, string(out)
}

// TestJobspecParityCLI: a job file without `operator` passes Drover's CLI
// and server, and file() reads relative to the CLI's working directory,
// as with Nomad's CLI.
func TestJobspecParityCLI(t *testing.T) {
	srv := newServer(t, serverSpec{name: "jsp-server", bootstrapExpect: 1})
	waitLeader(t, srv)
	jobDir, workDir := t.TempDir(), t.TempDir()
	jobFile := filepath.Join(jobDir, "jsp-parity.nomad.hcl")
	require.NoError(t, os.WriteFile(jobFile, []byte(jspParityJobHCL), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(workDir, "motd.txt"), []byte("from the working directory\n"), 0o600))

	code, out := droverIn(t, workDir, srv.httpAddr(), "job", "validate", jobFile)
	require.Equal(t, 0, code, out)

	// Beside the job file there is no motd.txt: from there it is not found.
	code, out = droverIn(t, jobDir, srv.httpAddr(), "job", "validate", jobFile)
	require.NotEqual(t, 0, code, out)
	require.Contains(t, out, "motd.txt")

	code, out = droverIn(t, workDir, srv.httpAddr(), "job", "run", "-detach", jobFile)
	require.Equal(t, 0, code, out)
	job, _, err := srv.client(t).Jobs().Info("jsp-parity", nil)
	require.NoError(t, err)
	require.Len(t, job.Constraints, 1)
	require.Equal(t, "=", job.Constraints[0].Operand)
	require.Len(t, job.Affinities, 1)
	require.Equal(t, "=", job.Affinities[0].Operand)
	require.Equal(t, int8(50), *job.Affinities[0].Weight)
	require.Equal(t, "from the working directory", job.Meta["motd"])
}
