package chaos

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Config is one run of the suite.
type Config struct {
	Seed   int64
	Faults int
	Limits Limits
	// Recover bounds the wait for the cluster to recover after a heal.
	Recover time.Duration
	// CheckTimeout bounds each linearizability check.
	CheckTimeout time.Duration
	// Kinds are the faults drawn from (nil: AllKinds).
	Kinds []Kind
	// FirstHost is the last octet of the first server's 127.0.0.x.
	FirstHost int
}

// Report is what a run found.
type Report struct {
	Runs   []FaultRun
	Ops    []Op
	Result Result
	Rows   []Row
}

// Run starts a three-server cluster, runs the workers through cfg.Faults
// seeded faults, heals everything, reads every register through every
// server, and checks the history. It fails t when the cluster does not
// recover from a fault; the verdict is in the report (the caller decides).
func Run(t testing.TB, bin string, cfg Config) Report {
	t.Helper()
	c := StartCluster(t, bin, 3, cfg.FirstHost)
	kinds := cfg.Kinds
	if len(kinds) == 0 {
		kinds = AllKinds
	}
	schedule := Schedule(cfg.Seed, cfg.Faults, kinds, cfg.Limits)
	rec := NewRecorder(time.Now())
	ws := &workers{c: c, rec: rec, w: DefaultWorkload, seed: cfg.Seed, granted: map[string]bool{}}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	start := func(f func(context.Context, int), id int) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx, id) }()
	}
	for i := 0; i < 3; i++ {
		start(ws.register, i)
	}
	start(ws.stale, 3)
	start(ws.lock, 4)
	start(ws.lock, 5)
	start(ws.jobs, 6)
	start(ws.jobs, 7)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			wg.Wait()
		}
	}
	t.Cleanup(stop) // a failed run stops its workers before the cluster goes

	var runs []FaultRun
	var windows []Window
	// fail ends a run the cluster did not come through: it keeps the
	// history so far, every server's data directory and log (keepFailed),
	// and fails t saying where.
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s%s", fmt.Sprintf(format, args...), keepFailed(c, cfg.Seed, rec.Ops()))
	}
	time.Sleep(2 * time.Second) // a quiet start: the history begins healthy
	for i, f := range schedule {
		leader := c.Leader()
		if leader < 0 {
			var err error
			if leader, err = c.WaitLeader(cfg.Recover); err != nil {
				fail("chaos seed %d: before fault %d: %v%s", cfg.Seed, i, err, c.Tails(40))
			}
		}
		noSpace := 0
		if f.Kind == DiskFull {
			noSpace, _ = noSpaceLines(c.DiskTarget(f))
		}
		run := FaultRun{Kind: f.Kind, Start: rec.Now()}
		heal, cut, err := c.Apply(f, leader)
		if err != nil {
			if heal != nil {
				_ = heal()
			}
			fail("chaos seed %d: fault %d (%s): %v", cfg.Seed, i, f.Kind, err)
		}
		from := rec.Now()
		t.Logf("fault %d at %v: %s (leader s%d, cut off s%d) for %v", i, time.Duration(from).Round(time.Millisecond), f.Kind, leader, cut, f.Hold)
		time.Sleep(f.Hold) // the fault's duration is the point of the test
		to := rec.Now()
		claims := cut >= 0 && c.ClaimsLead(cut)
		t.Logf("  at the end of the hold, the servers see leaders %s", c.Views())
		if err := heal(); err != nil {
			fail("chaos seed %d: heal fault %d (%s): %v", cfg.Seed, i, f.Kind, err)
		}
		run.Healed = rec.Now()
		if f.Kind == DiskFull {
			s := c.DiskTarget(f)
			n, last := noSpaceLines(s)
			t.Logf("  %s's disk was full: it logged %d lines of \"no space left on device\" (exited: %v); the last: %s", s.Name, n-noSpace, s.Exited(), last)
		}
		t.Logf("  data disks after the heal: %s", c.DiskUse())
		windows = append(windows, Window{Kind: f.Kind, Server: cut, From: from, To: to, ClaimsLead: claims})
		if _, err := c.WaitLeader(cfg.Recover); err != nil {
			fail("chaos seed %d: after fault %d (%s): %v (data disks now: %s)%s", cfg.Seed, i, f.Kind, err, c.DiskUse(), c.Tails(60))
		}
		run.Recovered = rec.Now()
		runs = append(runs, run)
		time.Sleep(f.Gap)
	}
	stop()
	t.Logf("chaos seed %d: the most each data disk held after a heal: %s (of %d MiB)", cfg.Seed, c.MaxDiskUse(), serverDiskMiB())

	// Every register read through every server, after the heal: an
	// acknowledged write is never lost.
	for _, s := range c.Servers {
		op := Op{Worker: 100 + s.Index, Server: s.Index, Kind: RegRead, Key: JobKey(DefaultWorkload.JobID), Call: rec.Now()}
		v, _, ok := readJob(s, DefaultWorkload.JobID)
		op.Return = rec.Now()
		if !ok {
			fail("chaos seed %d: final read of job %s through %s failed", cfg.Seed, DefaultWorkload.JobID, s.Name)
		}
		op.Value = v
		rec.Add(op)
	}
	for _, key := range DefaultWorkload.RegKeys {
		for _, s := range c.Servers {
			op := Op{Worker: 100 + s.Index, Server: s.Index, Kind: RegRead, Key: key, Call: rec.Now()}
			v, _, err := s.API.Variables().Read(key, nil)
			op.Return = rec.Now()
			if err == nil {
				op.Value = v.Items["v"]
			} else if !errors.Is(err, api.ErrVariablePathNotFound) {
				fail("chaos seed %d: final read of %s through %s: %v", cfg.Seed, key, s.Name, err)
			}
			rec.Add(op)
		}
	}
	// The lock read through every server: a ghost still held at the end
	// is seen (ResolveAcquires counts on it).
	for _, s := range c.Servers {
		op := Op{Worker: 100 + s.Index, Server: s.Index, Kind: LockRead, Key: DefaultWorkload.LockKey, Call: rec.Now()}
		v, _, err := s.API.Variables().Read(DefaultWorkload.LockKey, nil)
		op.Return = rec.Now()
		if err == nil {
			op.setHolder(v)
		} else if !errors.Is(err, api.ErrVariablePathNotFound) {
			fail("chaos seed %d: final read of %s through %s: %v", cfg.Seed, DefaultWorkload.LockKey, s.Name, err)
		}
		rec.Add(op)
	}
	ops := rec.Ops()
	dir := keepDir(cfg.Seed)
	res := Check(ops, windows, []string{DefaultWorkload.LockKey}, cfg.CheckTimeout, dir)
	if !res.Failed() && dir != "" {
		_ = removeAll(dir)
	} else if dir != "" {
		// The history, to check again without running the faults again.
		if path, err := SaveHistory(dir, ops); err == nil {
			t.Logf("chaos seed %d: the history is kept in %s", cfg.Seed, path)
		}
	}
	return Report{Runs: runs, Ops: ops, Result: res, Rows: Table(runs, ops, res)}
}

// Counts tallies operations by kind and outcome: evidence that the
// history exercised what it claims (e.g. that faults left unknown writes).
func Counts(ops []Op) string {
	n := map[string]int{}
	var keys []string
	for _, o := range ops {
		k := fmt.Sprintf("%s/%s", o.Kind, o.Outcome)
		if n[k] == 0 {
			keys = append(keys, k)
		}
		n[k]++
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, n[k])
	}
	return strings.TrimSpace(b.String())
}

// Summary is the report's table with its seed.
func (r Report) Summary(seed int64) string {
	out := fmt.Sprintf("chaos seed %d: %d faults, %d operations (%s)\n%s", seed, len(r.Runs), len(r.Ops), Counts(r.Ops), Format(r.Rows, r.Result))
	if r.Result.Failed() {
		out += "timeline:\n" + Timeline(r.Runs)
	}
	return out
}

// keepFailed keeps what a failed run leaves for a look afterwards: the
// history so far (history.json) and every server's data directory and
// log, in a new directory it names (or says why it could not).
func keepFailed(c *Cluster, seed int64, ops []Op) string {
	dir := keepDir(seed)
	if dir == "" {
		return "\n(nothing kept: no directory for it)"
	}
	var errs []error
	if _, err := SaveHistory(dir, ops); err != nil {
		errs = append(errs, err)
	}
	if err := c.KeepData(dir); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Sprintf("\nkept in %s, in part: %v", dir, err)
	}
	return fmt.Sprintf("\nthe history so far, every server's data directory and log are kept in %s", dir)
}
