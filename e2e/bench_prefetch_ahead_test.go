package e2e

import (
	"fmt"
	"os"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/drover-project/drover/testutil/dockertest"
	"github.com/drover-project/drover/testutil/registry"
)

// BenchmarkPrefetchAhead measures the total time of a rollout of one new
// image (8 MiB of new layer) over four Docker clients in waves of one
// through a throttled registry, with ahead-of-wave prefetch
// (prefetch_parallel 4) and without (prefetch_parallel 0), and prints a
// table with the ratio. It is a benchmark, not a test:
//
//	make bench-prefetch-ahead
//
// Every client has a Docker engine of its own (dockertest.StartEngine: a
// private dockerd with its own image store, run as root), so every node
// pulls the image itself, as on a fleet. The registry is throttled two
// ways: 1 MiB/s for each download on its own (each node behind its own
// link: the pulls ahead of the wave run side by side) and 1 MiB/s shared by
// all downloads (one saturated registry uplink: pulling sooner cannot make
// the bytes arrive sooner).
//
// One run on the shared 2-core development machine (each served 32 MiB:
// every node pulled the image once; pulls ahead started/finished 3/3 with
// prefetch, none without):
//
//	registry link      prefetch_parallel  rollout  ratio (off/on)
//	1 MiB/s per node   4                  13.1 s
//	1 MiB/s per node   0                  37.8 s   2.89x
//	1 MiB/s shared     4                  37.0 s
//	1 MiB/s shared     0                  37.4 s   1.01x
func BenchmarkPrefetchAhead(b *testing.B) {
	const (
		nodes     = 4
		padding   = 8 << 20
		bandwidth = 1 << 20
	)
	dc := newEngineAheadCluster(b, nodes)
	base := dc.pushVersion(b, "base", 0)
	if code, out := dc.run(b, "-var", "image="+base); code != 0 {
		b.Fatalf("initial rollout failed:\n%s", out)
	}
	type row struct {
		link     string
		parallel int
		took     time.Duration
		served   int64
		stats    map[string]int
	}
	links := []struct {
		name string
		set  func(r *registry.Registry, bps int64)
	}{
		{"per node", (*registry.Registry).SetDownloadBandwidth},
		{"shared", (*registry.Registry).SetBandwidth},
	}
	var rows []row
	version := 0
	for i := 0; i < b.N; i++ {
		for _, link := range links {
			for _, parallel := range []int{4, 0} {
				version++
				ref := dc.pushVersion(b, fmt.Sprintf("a%d", version), padding+int64(version))
				before, servedBefore := dc.aheadStats(b), dc.reg.TotalBlobBytes()
				link.set(dc.reg, bandwidth)
				start := time.Now()
				code, out := dc.run(b, "-var", "image="+ref, "-var", fmt.Sprintf("parallel=%d", parallel))
				took := time.Since(start)
				link.set(dc.reg, 0)
				if code != 0 {
					b.Fatalf("rollout failed:\n%s", out)
				}
				after := dc.aheadStats(b)
				for k := range after {
					after[k] -= before[k]
				}
				rows = append(rows, row{link: link.name, parallel: parallel, took: took,
					served: dc.reg.TotalBlobBytes() - servedBefore, stats: after})
				b.Logf("%s link, prefetch_parallel %d: %s", link.name, parallel, took)
			}
		}
	}
	b.StopTimer()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\nnodes\twaves\timage padding\tregistry link\tprefetch_parallel\tpulls ahead (started/finished)\tserved\trollout\tratio (off/on)\n")
	for i, r := range rows {
		ratio := ""
		if r.parallel == 0 && i > 0 && rows[i-1].parallel != 0 {
			ratio = fmt.Sprintf("%.2fx", float64(r.took)/float64(rows[i-1].took))
		}
		fmt.Fprintf(w, "%d\t%d x 1\t%d MiB\t%d MiB/s %s\t%d\t%d/%d\t%.1f MiB\t%s\t%s\n", nodes, nodes, padding>>20,
			bandwidth>>20, r.link, r.parallel, r.stats["started"], r.stats["finished"],
			float64(r.served)/(1<<20), r.took.Round(100*time.Millisecond), ratio)
	}
	_ = w.Flush()
}

// aheadHostJobHCL is aheadJobHCL for clients on private engines, which
// have no bridge: the task runs in the host's network and listens on its
// dynamic port.
const aheadHostJobHCL = `
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
      port "http" {}
    }
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "server" {
      driver = "docker"
      config {
        image              = var.image
        network_mode       = "host"
        prefetch_parallel  = var.parallel
        image_pull_timeout = "3m"
      }
      env {
        PORT = "${NOMAD_PORT_http}"
      }
      resources {
        cpu    = 50
        memory = 64
      }
    }
  }
}
`

// newEngineAheadCluster is a dockerCluster of n Docker clients, each on a
// private Docker engine of its own, running aheadHostJobHCL. The engines
// are started first, so that they are torn down after the agents.
func newEngineAheadCluster(t testing.TB, n int) *dockerCluster {
	t.Helper()
	engines := make([]*dockertest.Engine, n)
	for i := range engines {
		engines[i] = dockertest.StartEngine(t, dockertest.EngineOptions{})
	}
	dc := &dockerCluster{reg: registry.Start(t, registry.Options{}), seed: time.Now().UnixNano(), digests: map[string]string{}}
	dc.srv = newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, dc.srv)
	dc.api = dc.srv.client(t)
	for i, e := range engines {
		minPort := 30000 + 500*(i+1)
		dc.clients = append(dc.clients, newClientAgentWith(t, fmt.Sprintf("engine-%d", i+1),
			fmt.Sprintf("min_dynamic_port = %d\n  max_dynamic_port = %d", minPort, minPort+99),
			fmt.Sprintf("plugin \"docker\" {\n  config {\n    endpoint    = %q\n    image_delay = \"2s\"\n  }\n}", e.Host),
			dc.srv.httpHostPort()))
	}
	waitReadyNodes(t, dc.api, n)
	dc.jobFile = writeJobFile(t, aheadHostJobHCL)
	t.Cleanup(func() {
		// The engines' teardown removes the containers and images.
		_, _ = drover(t, dc.srv.httpAddr(), "job", "stop", "-purge", "-yes", "web")
	})
	return dc
}
