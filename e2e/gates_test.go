package e2e

import (
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/deploymentwatcher"
)

const gateSecret = "e2e-gate-secret"

// gateJobHCL is system job "web" rolled out one node at a time, whose
// group meta is meta (HCL lines) and whose raw_exec task runs command
// with args.
func gateJobHCL(meta, command string, args ...string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf(`
job "web" {
  type        = "system"
  datacenters = ["dc1"]
  update {
    max_parallel      = 1
    health_check      = "task_states"
    min_healthy_time  = "1s"
    healthy_deadline  = "30s"
    progress_deadline = "2m"
    auto_revert       = true
  }
  group "web" {
    meta = {
%s
    }
    restart {
      attempts = 10
      interval = "10m"
      delay    = "300ms"
      mode     = "fail"
    }
    task "server" {
      driver = "raw_exec"
      config {
        command = %q
        args    = [%s]
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
  }
}
`, meta, command, strings.Join(quoted, ", "))
}

// gateServer starts a server whose gates use prometheus (may be "") and
// the test secret, and clients client agents.
func gateServer(t *testing.T, prometheus string, clients int) (*agentProc, *api.Client) {
	extra := fmt.Sprintf("gate_webhook_secret = %q", gateSecret)
	if prometheus != "" {
		extra += fmt.Sprintf("\n  prometheus_address = %q", prometheus)
	}
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1, extra: extra})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", lastLines(srv.logs(), 40))
		}
	})
	waitLeader(t, srv)
	c := srv.client(t)
	for i := 1; i <= clients; i++ {
		newClientAgent(t, fmt.Sprintf("client-%d", i), srv.httpHostPort())
	}
	waitReadyNodes(t, c, clients)
	return srv, c
}

// startPrometheus runs the prometheus binary on a free port, scraping
// target every second, until the test ends; it returns its address.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed (make prometheus-deps)")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
scrape_configs:
  - job_name: app
    static_configs:
      - targets: [%q]
`, target)), 0o600))
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("prometheus log:\n%s", lastLines(string(b), 30))
		}
	})
	base := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 200*time.Millisecond, "prometheus never became ready")
	return base
}

// buildTestCommand builds ./testdata/<name> and returns the binary.
func buildTestCommand(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	out, err := exec.Command("go", "build", "-o", bin, "./testdata/"+name).CombinedOutput()
	require.NoError(t, err, "build %s: %s", name, out)
	return bin
}

// TestGateMetricFailsBadVersion: a real Prometheus scrapes the job's
// service. Version 0 reports no errors and its metric gate lets it
// complete; version 1 reports an error ratio of 0.5, its gate fails it
// after more than drover.analysis_failure_limit failed evaluations, and
// auto_revert registers version 0's spec again (version 2), which the
// gate lets complete. A job with a metric gate is refused by a server
// without prometheus_address.
func TestGateMetricFailsBadVersion(t *testing.T) {
	metricsd := buildTestCommand(t, "metricsd")
	appAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	prom := startPrometheus(t, appAddr)
	srv, c := gateServer(t, prom, 1)
	meta := `      "drover.analysis_query"         = "max(app_error_ratio{nomad_job=\"$job\"})"
      "drover.analysis_condition"     = "< 0.1"
      "drover.analysis_interval"      = "2s"
      "drover.analysis_failure_limit" = "1"`
	job := func(version string, errors string) string {
		return gateJobHCL(meta, metricsd, "-addr", appAddr, "-job", "${NOMAD_JOB_ID}", "-version", version, "-errors", errors)
	}
	run := func(hcl string) {
		t.Helper()
		code, out := drover(t, srv.httpAddr(), "job", "run", "-detach", writeJobFile(t, hcl))
		require.Equal(t, 0, code, out)
	}

	run(job("0", "0"))
	d0 := waitDeployment(t, c, 0, "successful")
	require.Equal(t, "Deployment completed successfully", d0.StatusDescription)
	gates := deploymentGates(t, srv, d0.ID)
	require.Contains(t, string(gates["web"]), `"Result":"pass"`, "the gate's record: %s", gates["web"])

	run(job("1", "0.5"))
	d1 := waitVersionDeployment(t, c, 1, "failed") // the revert's deployment may already be the latest
	require.Equal(t, `Deployment failed: metric gate of group "web": value 0.5 is not < 0.1 (2 failed evaluations, limit 1) - rolling back to job version 0`, d1.StatusDescription)
	code, out := drover(t, srv.httpAddr(), "deployment", "status", d1.ID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, d1.StatusDescription)
	require.Regexp(t, `(?m)^Gates$`, out)
	require.Regexp(t, `web +\S+ +metric +fail +2/\d+`, out)

	d2 := waitDeployment(t, c, 2, "successful")
	require.Equal(t, "Deployment completed successfully", d2.StatusDescription)
	require.Equal(t, map[uint64]int{2: 1}, liveVersions(t, c))

	// A server without prometheus_address refuses the gate at registration.
	bare := newServer(t, serverSpec{name: "bare", bootstrapExpect: 1})
	waitLeader(t, bare)
	code, out = drover(t, bare.httpAddr(), "job", "run", "-detach", writeJobFile(t, job("0", "0")))
	require.NotEqual(t, 0, code)
	require.Contains(t, out, `meta "drover.analysis_query": this server has no server { prometheus_address } configured`)
}

// waitVersionDeployment waits for job "web"'s deployment of version to
// have status, whatever deployments came after it.
func waitVersionDeployment(t *testing.T, c *api.Client, version uint64, status string) *api.Deployment {
	t.Helper()
	var found *api.Deployment
	require.Eventually(t, func() bool {
		ds, _, err := c.Jobs().Deployments("web", false, nil)
		require.NoError(t, err)
		for _, d := range ds {
			if d.JobVersion == version {
				found = d
				return d.Status == status
			}
		}
		return false
	}, 90*time.Second, 200*time.Millisecond, "deployment of version %d never became %s", version, status)
	return found
}

// deploymentGates reads GET /v1/deployment/gates/{id}.
func deploymentGates(t *testing.T, srv *agentProc, id string) map[string]json.RawMessage {
	t.Helper()
	resp, err := http.Get(srv.httpAddr() + "/v1/deployment/gates/" + id)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out struct{ Gates map[string]json.RawMessage }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Gates
}

// hookRecorder is a webhook gate that answers status (503 until told
// otherwise) and records the signed calls it got.
type hookRecorder struct {
	status atomic.Int32
	mu     sync.Mutex
	calls  []deploymentwatcher.WebhookBody
	bad    []string // calls whose signature did not verify
	got    chan struct{}
}

func (h *hookRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var b deploymentwatcher.WebhookBody
	_ = json.Unmarshal(body, &b)
	h.mu.Lock()
	if !hmac.Equal([]byte(r.Header.Get(deploymentwatcher.SignatureHeader)), []byte(deploymentwatcher.Sign(gateSecret, body))) {
		h.bad = append(h.bad, string(body))
	}
	h.calls = append(h.calls, b)
	h.mu.Unlock()
	select {
	case h.got <- struct{}{}:
	default:
	}
	status := int(h.status.Load())
	w.WriteHeader(status)
	if status != http.StatusOK {
		_, _ = io.WriteString(w, "maintenance window")
	}
}

func (h *hookRecorder) snapshot() ([]deploymentwatcher.WebhookBody, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]deploymentwatcher.WebhookBody(nil), h.calls...), append([]string(nil), h.bad...)
}

// TestGateWebhookHoldsNextWave: on two nodes rolled out one at a time, a
// webhook gate answering 503 holds the second wave: the deployment is
// paused with the answer in its description and the second node keeps
// the old version; calls are signed and retried; once the hook answers
// 200 the deployment resumes and completes.
func TestGateWebhookHoldsNextWave(t *testing.T) {
	hook := &hookRecorder{got: make(chan struct{}, 1)}
	hook.status.Store(http.StatusServiceUnavailable)
	hs := httptest.NewServer(hook)
	t.Cleanup(hs.Close)
	srv, c := gateServer(t, "", 2)
	meta := fmt.Sprintf(`      "drover.gate_webhook" = %q`, hs.URL+"/gate")
	job := func(version string) string { // a destructive change per version (meta alone updates in place)
		return gateJobHCL(meta, "/bin/sh", "-c", "exec sleep 360"+version)
	}
	run := func(hcl string) {
		t.Helper()
		code, out := drover(t, srv.httpAddr(), "job", "run", "-detach", writeJobFile(t, hcl))
		require.Equal(t, 0, code, out)
	}

	// Version 0 is placed on both nodes at once (fresh placements are no
	// wave); the webhook has nothing to hold.
	run(job("0"))
	waitDeployment(t, c, 0, "successful")

	run(job("1"))
	d := waitDeployment(t, c, 1, "paused")
	require.Equal(t, `Deployment paused: webhook gate of group "web" before wave 2: answered 503: maintenance window`, d.StatusDescription)
	require.Equal(t, map[uint64]int{0: 1, 1: 1}, liveVersions(t, c), "the second wave is held")
	calls, bad := hook.snapshot()
	require.Empty(t, bad, "every call is signed with the server's secret")
	require.NotEmpty(t, calls)
	first := calls[0]
	require.Equal(t, "web", first.Job)
	require.Equal(t, "default", first.Namespace)
	require.Equal(t, uint64(1), first.Version)
	require.Equal(t, d.ID, first.DeploymentID)
	require.Equal(t, "wave", first.Checkpoint)
	require.Equal(t, 2, first.Wave)
	require.Len(t, first.NodeIDs, 1, "the node the first wave updated")
	require.Equal(t, 1, first.Attempt)

	// Retried while paused (the next call is on its way within seconds).
	select {
	case <-hook.got:
	case <-time.After(30 * time.Second):
		t.Fatal("the webhook was not called again")
	}
	require.Eventually(t, func() bool {
		calls, _ := hook.snapshot()
		return len(calls) >= 2 && calls[len(calls)-1].Attempt >= 2
	}, 30*time.Second, 100*time.Millisecond)
	code, out := drover(t, srv.httpAddr(), "deployment", "status", d.ID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, d.StatusDescription)
	require.Regexp(t, `web +wave 2 +webhook +fail +0/0 +0 +webhook +answered 503: maintenance window`, out)
	require.Equal(t, map[uint64]int{0: 1, 1: 1}, liveVersions(t, c), "still held")

	hook.status.Store(http.StatusOK)
	done := waitDeployment(t, c, 1, "successful")
	require.Equal(t, "Deployment completed successfully", done.StatusDescription)
	require.Equal(t, map[uint64]int{1: 2}, liveVersions(t, c))
	calls, bad = hook.snapshot()
	require.Empty(t, bad)
	last := calls[len(calls)-1]
	require.Equal(t, 2, last.Wave)
	require.Greater(t, last.Attempt, 1, "the call that passed was a retry")
}

// TestGateWebhookHoldsServicePromotion: a service job's auto-promotion
// waits for the webhook gate: 503 pauses the deployment before
// promotion with the canary healthy and the old allocations kept; 200
// promotes, and the later wave asks the webhook again before it starts.
func TestGateWebhookHoldsServicePromotion(t *testing.T) {
	hook := &hookRecorder{got: make(chan struct{}, 1)}
	hook.status.Store(http.StatusServiceUnavailable)
	hs := httptest.NewServer(hook)
	t.Cleanup(hs.Close)
	srv, c := gateServer(t, "", 1)
	job := func(version string) string {
		return fmt.Sprintf(`
job "web" {
  type        = "service"
  datacenters = ["dc1"]
  update {
    max_parallel      = 1
    canary            = 1
    auto_promote      = true
    health_check      = "task_states"
    min_healthy_time  = "1s"
    healthy_deadline  = "30s"
    progress_deadline = "2m"
  }
  group "web" {
    count = 3
    meta = {
      "drover.gate_webhook" = %q
    }
    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "exec sleep 360%s"]
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
`, hs.URL+"/gate", version)
	}
	run := func(hcl string) {
		t.Helper()
		code, out := drover(t, srv.httpAddr(), "job", "run", "-detach", writeJobFile(t, hcl))
		require.Equal(t, 0, code, out)
	}
	run(job("0"))
	waitDeployment(t, c, 0, "successful")

	run(job("1"))
	d := waitDeployment(t, c, 1, "paused")
	require.Equal(t, `Deployment paused: webhook gate of group "web" before promotion: answered 503: maintenance window`, d.StatusDescription)
	require.False(t, d.TaskGroups["web"].Promoted)
	require.Equal(t, map[uint64]int{0: 3, 1: 1}, liveVersions(t, c), "the canary beside the old allocations")
	calls, bad := hook.snapshot()
	require.Empty(t, bad)
	require.Equal(t, "promotion", calls[0].Checkpoint)
	require.Equal(t, uint64(1), calls[0].Version)

	hook.status.Store(http.StatusOK)
	done := waitDeployment(t, c, 1, "successful")
	require.True(t, done.TaskGroups["web"].Promoted)
	require.Equal(t, map[uint64]int{1: 3}, liveVersions(t, c))
	calls, _ = hook.snapshot()
	var waves []int
	for _, call := range calls {
		if call.Checkpoint == "wave" {
			waves = append(waves, call.Wave)
		}
	}
	// Promotion passed at 1 healthy and let wave 2 go; wave 3 was asked for.
	require.Equal(t, []int{3}, waves, "%+v", calls)
}
