package e2e

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// batchRerunJobHCL is a raw_exec batch job that exits with var.exit and
// never restarts or reschedules; var.run is a job meta value only.
const batchRerunJobHCL = `
variable "run" {
  default = "1"
}
variable "exit" {
  default = "0"
}
job "vol" {
  type        = "batch"
  datacenters = ["dc1"]
  meta {
    run = var.run
  }
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo run $NOMAD_META_run; exit ${var.exit}"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`

// TestBatchPurgedAndChangedJobsRunAgain is the operator's story: a batch
// job fails; it is stopped with -purge and run again from the same file:
// it runs (a new allocation), and `job status` shows only the new
// allocation. Then it completes, and a changed meta value runs it again;
// the unchanged file does not.
func TestBatchPurgedAndChangedJobsRunAgain(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	newClientAgent(t, "client-1", srv.httpHostPort())
	waitReadyNodes(t, c, 1)
	file := writeJobFile(t, batchRerunJobHCL)
	run := func(vars ...string) {
		t.Helper()
		args := []string{"job", "run", "-detach"}
		for _, v := range vars {
			args = append(args, "-var", v)
		}
		code, out := drover(t, srv.httpAddr(), append(args, file)...)
		require.Equal(t, 0, code, out)
	}
	// finished waits until the job lists n allocations (all=false) and
	// every one finished; it returns them.
	finished := func(n int) []*api.AllocationListStub {
		t.Helper()
		var allocs []*api.AllocationListStub
		require.Eventually(t, func() bool {
			var err error
			allocs, _, err = c.Jobs().Allocations("vol", false, nil)
			if err != nil || len(allocs) != n {
				return false
			}
			for _, a := range allocs {
				if a.ClientStatus != "complete" && a.ClientStatus != "failed" {
					return false
				}
			}
			return true
		}, 60*time.Second, 200*time.Millisecond, "want %d finished allocations of vol", n)
		return allocs
	}

	run("exit=1")
	old := finished(1)[0]
	require.Equal(t, "failed", old.ClientStatus)

	code, out := drover(t, srv.httpAddr(), "job", "stop", "-purge", "-yes", "vol")
	require.Equal(t, 0, code, out)
	run("exit=1")
	fresh := finished(1)[0]
	require.NotEqual(t, old.ID, fresh.ID, "the purged job, registered again, runs")
	require.Equal(t, "failed", fresh.ClientStatus, "it ran: its task exited 1")
	code, out = drover(t, srv.httpAddr(), "job", "status", "vol")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, fresh.ID[:8])
	require.NotContains(t, out, old.ID[:8], "job status does not list the purged job's allocation")

	// A version that completes, then a change of meta only: it runs again.
	run("exit=0")
	finished(2)
	run("exit=0", "run=2")
	allocs := finished(3)
	versions := map[uint64]string{}
	for _, a := range allocs {
		versions[a.JobVersion] = a.ClientStatus
	}
	require.Equal(t, map[uint64]string{0: "failed", 1: "complete", 2: "complete"}, versions,
		"the changed meta value ran the completed job again")

	// Unchanged: `job run` (monitoring its evaluation to the end) places
	// nothing.
	code, out = drover(t, srv.httpAddr(), "job", "run", "-var", "exit=0", "-var", "run=2", file)
	require.Equal(t, 0, code, out)
	got, _, err := c.Jobs().Allocations("vol", false, nil)
	require.NoError(t, err)
	require.Len(t, got, 3, "the unchanged job does not run again: %s", out)
}
