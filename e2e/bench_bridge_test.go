package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/testutil/registry"
)

// bridgeBenchJobHCL is a system job whose Docker task serves on a static
// host port mapped to 8080, with prefetch on; the second verb is the
// group's network mode line, the fourth the task's ports line.
const bridgeBenchJobHCL = `
variable "image" {
  type = string
}
job %q {
  type        = "system"
  datacenters = ["dc1"]
  update {
    max_parallel      = 1
    health_check      = "task_states"
    min_healthy_time  = "1s"
    healthy_deadline  = "2m"
    progress_deadline = "3m"
    auto_revert       = false
  }
  group "web" {
    network {
      %s
      port "http" {
        static = %d
        to     = 8080
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
        prefetch           = true
        image_pull_timeout = "3m"
        %s
      }
      resources {
        cpu    = 50
        memory = 64
      }
    }
  }
}
`

// staticProber asks url every 20 ms and records the longest time between
// two answers (200 OK) once a first one came: how long the node was dark.
type staticProber struct {
	url     string
	mu      sync.Mutex
	start   time.Time
	last    time.Time // last answer; zero before the first
	body    string    // the last answer's body
	longest time.Duration
	// The longest dark time began at from (since start), after an answer
	// before and ended with an answer after.
	from          time.Duration
	before, after string
	stop          chan struct{}
	done          chan struct{}
}

func probeStatic(url string) *staticProber {
	p := &staticProber{url: url, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	httpc := &http.Client{Timeout: 200 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	go func() {
		defer close(p.done)
		for {
			resp, err := httpc.Get(p.url)
			ok := err == nil && resp.StatusCode == 200
			var body []byte
			if err == nil {
				body, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			now := time.Now()
			p.mu.Lock()
			if ok {
				b := strings.TrimPrefix(strings.TrimSpace(string(body)), "version ")
				if !p.last.IsZero() && now.Sub(p.last) > p.longest {
					p.longest, p.from, p.before, p.after = now.Sub(p.last), p.last.Sub(p.start), p.body, b
				}
				p.last, p.body = now, b
			}
			p.mu.Unlock()
			select {
			case <-p.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return p
}

// finish stops probing and returns the longest dark time and where it
// was ("+1.9s old→new": it began 1.9 s after probing began, between
// answers of those versions).
func (p *staticProber) finish() (time.Duration, string) {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.longest, fmt.Sprintf("%s@+%s %s→%s", p.longest.Round(10*time.Millisecond), p.from.Round(100*time.Millisecond), p.before, p.after)
}

// BenchmarkPrefetchGapBridge measures how long a node is dark during a
// system-job rollout of a Docker task on a static port with prefetch on,
// in host networking and in bridge mode (the static port mapped with
// "to"), side by side on one client: the two jobs are rolled out in turn
// (host, bridge, bridge, host, ...) and a prober asks each job's static
// port every 20 ms. It prints the dark time of each mode (p50 and max over
// the rounds) and their ratio. It needs root, Docker and the CNI plugins;
// it is a benchmark, not a test: run it with
//
//	go test -run '^$' -bench PrefetchGapBridge -benchtime 1x ./e2e/
func BenchmarkPrefetchGapBridge(b *testing.B) {
	const (
		rounds    = 6       // rollouts per mode per b.N
		padding   = 2 << 20 // a new 2 MiB layer per rollout
		bandwidth = 1 << 20 // pulled at 1 MiB/s while the old container serves
	)
	requireDocker(b)
	requireBridge(b)
	dc := &dockerCluster{seed: time.Now().UnixNano(), digests: map[string]string{}}
	dc.reg = registry.Start(b, registry.Options{})
	dc.srv = newServer(b, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(b, dc.srv)
	dc.api = dc.srv.client(b)
	client, bridge := bridgeClientWith(b, "bench-bridge", 26500, dc.srv.httpHostPort())
	waitReadyNodes(b, dc.api, 1)
	node, _, err := dc.api.Nodes().Info(nodeIDOf(b, dc.api, "bench-bridge"), nil)
	require.NoError(b, err)
	hostIP := node.Attributes["unique.network.ip-address"]
	require.NotEmpty(b, hostIP)

	type mode struct {
		name, job, file, url string
		gaps                 []time.Duration
		where                []string // finish's description of each
	}
	modes := []*mode{{name: "host", job: "bench-host"}, {name: "bridge", job: "bench-bridge"}}
	for _, m := range modes {
		port := freePort(b)
		netLine, portsLine := "", `ports = ["http"]`
		if m.name == "bridge" {
			netLine, portsLine = `mode = "bridge"`, ""
		}
		m.file = writeJobFile(b, fmt.Sprintf(bridgeBenchJobHCL, m.job, netLine, port, portsLine))
		m.url = fmt.Sprintf("http://%s/", net.JoinHostPort(hostIP, fmt.Sprint(port)))
	}
	seen := map[string]bool{} // every allocation of both jobs, for the cleanup checks
	b.Cleanup(func() {
		for _, m := range modes {
			_, _ = drover(b, dc.srv.httpAddr(), "job", "stop", "-purge", "-yes", m.job)
		}
		var ids []string
		for id := range seen {
			ids = append(ids, id)
		}
		removeAllocContainers(b, ids)
		removeImages(b, dc.pushed)
		removePauseImages(b)
	})
	remember := func() {
		for _, m := range modes {
			stubs, _, _ := dc.api.Jobs().Allocations(m.job, true, nil)
			for _, s := range stubs {
				seen[s.ID] = true
			}
		}
	}
	run := func(m *mode, v string) {
		ref := dc.pushVersion(b, v, padding)
		code, out := drover(b, dc.srv.httpAddr(), "job", "run", "-var", "image="+ref, m.file)
		if code != 0 {
			dc.logTaskEvents(b, m.job)
		}
		require.Equal(b, 0, code, out)
		require.Eventually(b, func() bool {
			body, err := httpBody(m.url)
			return err == nil && strings.TrimSpace(body) == "version "+v
		}, 30*time.Second, 50*time.Millisecond, "%s answers version %s on its static port", m.url, v)
		remember()
	}
	for _, m := range modes {
		run(m, m.name+"-0")
	}
	version := 0
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			order := modes
			if r%2 == 1 {
				order = []*mode{modes[1], modes[0]}
			}
			for _, m := range order {
				version++
				dc.reg.SetBandwidth(bandwidth)
				p := probeStatic(m.url)
				run(m, fmt.Sprintf("%s-%d", m.name, version))
				dark, where := p.finish()
				m.gaps, m.where = append(m.gaps, dark), append(m.where, where)
				dc.reg.SetBandwidth(0)
			}
		}
	}
	b.StopTimer()

	p50 := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	host, br := modes[0], modes[1]
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\nnetwork\trollouts\tdark p50\tdark max\tper rollout: dark@began (after probing began) last→first version answering\n")
	for _, m := range modes {
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\n", m.name, len(m.gaps), p50(m.gaps).Round(10*time.Millisecond),
			slices.Max(m.gaps).Round(10*time.Millisecond), strings.Join(m.where, " "))
	}
	_ = w.Flush()
	fmt.Printf("bridge/host: p50 %.2fx, max %.2fx\n", float64(p50(br.gaps))/float64(p50(host.gaps)),
		float64(slices.Max(br.gaps))/float64(slices.Max(host.gaps)))
	if builds := setupTimes(client.logs()); len(builds) > 0 {
		fmt.Printf("bridge namespace builds (pause container, CNI ADD, port mappings; before the old allocation stops): %d, p50 %s, max %s\n",
			len(builds), p50(builds).Round(10*time.Millisecond), slices.Max(builds).Round(10*time.Millisecond))
	}
	b.ReportMetric(float64(p50(host.gaps).Milliseconds()), "host-dark-p50-ms")
	b.ReportMetric(float64(p50(br.gaps).Milliseconds()), "bridge-dark-p50-ms")

	// Every namespace, iptables rule, pause container and veth of the
	// bridge job goes with it.
	remember()
	_, _ = drover(b, dc.srv.httpAddr(), "job", "stop", "-purge", "-yes", br.job)
	require.Eventually(b, func() bool {
		for id := range seen {
			if !networkGone(b, client, id) {
				return false
			}
		}
		return !bridgeHasVeth(b, bridge)
	}, 60*time.Second, 200*time.Millisecond, "the bridge job leaves no network behind")
}

// setupTimes are the durations of the client's namespace builds, from its
// log ("allocation network set up" ... took=1.2s).
func setupTimes(log string) []time.Duration {
	var out []time.Duration
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, "allocation network set up") {
			continue
		}
		_, took, ok := strings.Cut(l, "took=")
		if !ok {
			continue
		}
		if d, err := time.ParseDuration(strings.Fields(took)[0]); err == nil {
			out = append(out, d)
		}
	}
	return out
}
