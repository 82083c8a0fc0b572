package e2e

import (
	"bufio"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// aheadJobHCL is a system job of the fixture web server rolled out in
// waves of one, with prefetch_parallel set by a variable.
const aheadJobHCL = `
variable "image" {
  type = string
}
variable "parallel" {
  type    = number
  default = 4
}
job "web" {
  type        = "system"
  datacenters = ["dc1"]
  update {
    max_parallel      = 1
    health_check      = "task_states"
    min_healthy_time  = "1s"
    healthy_deadline  = "3m"
    progress_deadline = "5m"
  }
  group "web" {
    network {
      port "http" {
        to = 8080
      }
    }
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "server" {
      driver = "docker"
      config {
        image              = var.image
        ports              = ["http"]
        prefetch_parallel  = var.parallel
        image_pull_timeout = "3m"
      }
      resources {
        cpu    = 50
        memory = 64
      }
    }
  }
}
`

// newAheadCluster is a dockerCluster with n Docker clients running
// aheadJobHCL.
func newAheadCluster(t testing.TB, n int) *dockerCluster {
	t.Helper()
	// Clients' ranges start at 29000: below 32768, where the kernel's
	// ephemeral ports begin (a connection's local port may hold a host port
	// there), and apart from the other Docker suites'.
	dc := newDockerClusterN(t, n, 28000)
	dc.jobFile = writeJobFile(t, aheadJobHCL)
	return dc
}

// waitEveryNodeAnswers waits until all n nodes answer want.
func (dc *dockerCluster) waitEveryNodeAnswers(t testing.TB, n int, want string, timeout time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		got := dc.nodeAnswers(t)
		if len(got) != n {
			return false
		}
		for _, body := range got {
			if body != want {
				return false
			}
		}
		return true
	}, timeout, 200*time.Millisecond, "every node answers %q", want)
}

var aheadMetric = regexp.MustCompile(`^drover_prefetch_ahead_pulls_total\{outcome="(\w+)"\} (\S+)$`)

// aheadStats reads the server's drover_prefetch_ahead_pulls_total by
// outcome.
func (dc *dockerCluster) aheadStats(t testing.TB) map[string]int {
	resp, err := http.Get(dc.srv.httpAddr() + "/v1/metrics?format=prometheus")
	require.NoError(t, err)
	defer resp.Body.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if m := aheadMetric.FindStringSubmatch(sc.Text()); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			out[m[1]] = int(v)
		}
	}
	return out
}

// placedVersion counts the allocations of job version v.
func (dc *dockerCluster) placedVersion(t testing.TB, v uint64) int {
	stubs, _, err := dc.api.Jobs().Allocations("web", true, nil)
	require.NoError(t, err)
	n := 0
	for _, s := range stubs {
		if s.JobVersion == v {
			n++
		}
	}
	return n
}

// TestDockerPrefetchAheadOfTheWave: a system job rolled from v1 to v2 in
// waves of one over three Docker clients through a throttled registry.
// Every node but the first wave's is granted the pull at once
// (prefetch_parallel 4), before the second wave is placed; every node reports it done; the later waves find
// the image present and skip the pull; the old containers keep answering
// throughout. The clients share one Docker engine, which joins their pulls
// of one image into one, so the registry serves v2's blobs once.
func TestDockerPrefetchAheadOfTheWave(t *testing.T) {
	const nodes = 3
	dc := newAheadCluster(t, nodes)
	v1 := dc.pushVersion(t, "1", 0)
	v2 := dc.pushVersion(t, "2", 6<<20) // ~6 s at 1 MiB/s
	code, out := dc.run(t, "-var", "image="+v1)
	require.Equal(t, 0, code, out)
	dc.waitEveryNodeAnswers(t, nodes, "version 1", 60*time.Second)
	require.Equal(t, map[string]int{}, nonZero(dc.aheadStats(t)), "a first version pulls nothing ahead")

	dc.reg.SetBandwidth(1 << 20)
	defer dc.reg.SetBandwidth(0)
	blobsBefore := dc.reg.TotalBlobBytes()
	rec := dc.recordGaps(t)
	code, out = dc.run(t, "-detach", "-var", "image="+v2)
	require.Equal(t, 0, code, out)

	// The first wave is placed with the deployment (that node pulls in its
	// own prepare step); every other node is granted at once, before the
	// second wave.
	const ahead = nodes - 1
	if !assertEventually(func() bool { return dc.aheadStats(t)["started"] == ahead }, 30*time.Second) {
		t.Fatalf("every node is granted the pull at the deployment's start: stats %v\nserver log:\n%s", dc.aheadStats(t), grepLines(dc.srv.logs(), "prefetch"))
	}
	require.LessOrEqual(t, dc.placedVersion(t, 1), 1, "the grants came before the second wave")
	require.Eventually(t, func() bool { return dc.reg.TotalBlobBytes()-blobsBefore > 1<<20 }, 30*time.Second, 100*time.Millisecond)

	d := waitDeployment(t, dc.api, 1, "successful")
	gaps := rec.finish()
	require.Equal(t, nodes, d.TaskGroups["web"].HealthyAllocs)
	dc.waitEveryNodeAnswers(t, nodes, "version 2", 30*time.Second)
	for node, gap := range gaps {
		t.Logf("node %s longest gap %s", node[:8], gap)
		require.Less(t, gap, 3*time.Second, "node %s answered nothing for %s", node[:8], gap)
	}
	stats := dc.aheadStats(t)
	require.Equal(t, ahead, stats["finished"], "every node reported its pull done: %v", stats)
	require.Zero(t, stats["failed"]+stats["cancelled"], "%v", stats)

	// The old allocations show the pull; the later waves skipped theirs.
	stubs, _, err := dc.api.Jobs().Allocations("web", true, nil)
	require.NoError(t, err)
	shownAhead, skipped := 0, 0
	for _, s := range stubs {
		a, _, err := dc.api.Allocations().Info(s.ID, nil)
		require.NoError(t, err)
		for _, ev := range a.TaskStates["server"].Events {
			msg := ev.DisplayMessage + ev.Message
			switch {
			case s.JobVersion == 0 && strings.Contains(msg, "Pulled image "+dc.pinned(v2)+" ahead of the wave"):
				shownAhead++
			case s.JobVersion == 1 && strings.Contains(msg, "is present locally"):
				skipped++
			}
		}
	}
	require.Equal(t, ahead, shownAhead, "each old allocation shows the pull ahead of its wave")
	require.GreaterOrEqual(t, skipped, nodes-1, "the later waves found the image present")
}

func nonZero(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func assertEventually(cond func() bool, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cond()
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
