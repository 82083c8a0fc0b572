package chaos

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/e2e/internal/agentproc"
)

var droverBin string

func TestMain(m *testing.M) {
	if addr := os.Getenv(probeEnv); addr != "" {
		runProbe(addr)
	}
	bin, cleanup, err := agentproc.Build("../../cmd/drover")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	droverBin = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// checkTimeout bounds each linearizability check of a run of faults
// faults: two minutes, two seconds a fault for long runs.
func checkTimeout(faults int64) time.Duration {
	return max(2*time.Minute, time.Duration(faults)*2*time.Second)
}

// TestChaosRecheck checks a history a failed run kept
// (DROVER_CHAOS_HISTORY=…/history.json) again, without its fault windows:
// linearizability and stale reads only, within DROVER_CHAOS_CHECK_TIMEOUT
// seconds (default ten minutes).
func TestChaosRecheck(t *testing.T) {
	path := os.Getenv("DROVER_CHAOS_HISTORY")
	if path == "" {
		t.Skip("DROVER_CHAOS_HISTORY names no history to check")
	}
	ops, err := LoadHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	res := Check(ops, nil, []string{DefaultWorkload.LockKey}, time.Duration(envInt("DROVER_CHAOS_CHECK_TIMEOUT", 600))*time.Second, t.TempDir())
	t.Log("\n" + Format(nil, res))
	if res.Failed() {
		t.Fatalf("the history of %s breaks an invariant or was not decided", path)
	}
}

// TestChaos runs the fault suite: a short seeded run by default (about
// two minutes, part of CI), a long one with DROVER_CHAOS_FAULTS (as
// `make chaos SEED=... FAULTS=...` sets it). Any violation, or a history
// the checker could not decide in time, fails it.
func TestChaos(t *testing.T) {
	seed := envInt("DROVER_CHAOS_SEED", 1)
	cfg := Config{
		Seed:         seed,
		Faults:       int(envInt("DROVER_CHAOS_FAULTS", 6)),
		Limits:       Limits{HoldMin: 3 * time.Second, HoldMax: 6 * time.Second, GapMin: time.Second, GapMax: 2 * time.Second},
		Recover:      90 * time.Second,
		CheckTimeout: checkTimeout(envInt("DROVER_CHAOS_FAULTS", 6)),
		FirstHost:    int(envInt("DROVER_CHAOS_HOST", 11)),
	}
	// DROVER_CHAOS_KINDS (comma-separated) narrows the faults drawn.
	if v := os.Getenv("DROVER_CHAOS_KINDS"); v != "" {
		for _, k := range strings.Split(v, ",") {
			cfg.Kinds = append(cfg.Kinds, Kind(strings.TrimSpace(k)))
		}
	}
	// Packet loss is injected with the iptables statistic match; delay
	// needs netem, which the suite does not inject yet: say so.
	if ok, why := NetemAvailable(); !ok {
		t.Logf("SKIP delay faults: this kernel has no netem qdisc (%s); loss faults use iptables instead", why)
	} else {
		t.Logf("SKIP delay faults: netem is available but the suite does not inject delay yet; loss faults use iptables")
	}
	rep := Run(t, droverBin, cfg)
	t.Log("\n" + rep.Summary(seed))
	fmt.Println(rep.Summary(seed))
	if rep.Result.Failed() {
		t.Fatalf("chaos seed %d: the history breaks an invariant (rerun: make chaos SEED=%d FAULTS=%d)", seed, seed, cfg.Faults)
	}
}
