package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// FaultRun is one fault as carried out: its kind, when it started (run
// clock), and when the cluster had recovered (an agreed leader and an
// acknowledged write after the heal).
type FaultRun struct {
	Kind      Kind
	Start     int64
	Healed    int64
	Recovered int64
}

// Result is the verdict over one run's history.
type Result struct {
	Ops        int // operations checked
	Violations []Violation
	// Linearizability verdicts of the register keys and the lock, by name
	// ("register chaos/reg0", "lock chaos/lock"); Unknown means the
	// checker ran out of time (not a pass).
	Linear map[string]porcupine.CheckResult
	// Visualizations are HTML files of the failing histories.
	Visualizations []string
	// Dropped and Resolved count the CAS writes of unknown outcome that
	// ResolveUnknown found never took effect, or took effect.
	Dropped, Resolved int
	// ReleasesDropped and ReleasesBounded count the lock releases of
	// unknown outcome ResolveReleases dropped or bounded.
	ReleasesDropped, ReleasesBounded int
	// AcquiresDropped and AcquiresResolved count the lock acquires of
	// unknown outcome ResolveAcquires dropped or resolved.
	AcquiresDropped, AcquiresResolved int
}

// Failed reports whether anything was broken or left unchecked.
func (r Result) Failed() bool {
	if len(r.Violations) > 0 {
		return true
	}
	for _, v := range r.Linear {
		if v != porcupine.Ok {
			return true
		}
	}
	return false
}

// Check checks a run's history: the default register operations and the
// lock for linearizability (each within timeout), stale reads for never
// from the future, writes to cut-off servers for never acknowledged. A
// failing history is drawn as HTML into dir (if not "").
func Check(ops []Op, windows []Window, lockKeys []string, timeout time.Duration, dir string) Result {
	res := Result{Linear: map[string]porcupine.CheckResult{}}
	res.Violations = append(res.Violations, CheckStale(ops)...)
	res.Violations = append(res.Violations, CheckMinority(ops, windows)...)
	res.Violations = append(res.Violations, CheckStepDown(windows)...)
	res.Ops = len(ops)
	ops, res.Dropped, res.Resolved = ResolveUnknown(ops)
	ops, res.ReleasesDropped, res.ReleasesBounded = ResolveReleases(ops)
	ops, res.AcquiresDropped, res.AcquiresResolved = ResolveAcquires(ops)

	var regOps, lockOps []Op
	isLock := map[string]bool{}
	for _, k := range lockKeys {
		isLock[k] = true
	}
	for _, o := range ops {
		if isLock[o.Key] {
			lockOps = append(lockOps, o)
		} else if o.Kind == RegRead || o.Kind == RegWrite {
			regOps = append(regOps, o)
		}
	}
	keys := map[string][]Op{}
	for _, o := range regOps {
		keys[o.Key] = append(keys[o.Key], o)
	}
	for _, k := range lockKeys {
		keys[k] = nil // checked below
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		var model porcupine.Model
		var hist []porcupine.Operation
		name := "register " + k
		if isLock[k] {
			name = "lock " + k
			var these []Op
			known := map[string]bool{}
			for _, o := range lockOps {
				if o.Key == k {
					these = append(these, o)
					if o.Kind == LockAcquire && o.Outcome == OK {
						known[o.LockID] = true
					}
				}
			}
			model = LockModel(known)
			hist = toPorcupine(these, LockAcquire, LockRelease, LockRead)
		} else {
			model = RegisterModel
			hist = toPorcupine(keys[k], RegRead, RegWrite)
		}
		verdict, info := porcupine.CheckOperationsVerbose(model, hist, timeout)
		res.Linear[name] = verdict
		if verdict == porcupine.Illegal {
			msg := fmt.Sprintf("%s: %d operations are not linearizable", name, len(hist))
			if dir != "" {
				path := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(name)+".html")
				if err := porcupine.VisualizePath(model, info, path); err == nil {
					res.Visualizations = append(res.Visualizations, path)
					msg += " (drawn in " + path + ")"
				}
			}
			why, at := stuckAt(hist, info)
			res.Violations = append(res.Violations, Violation{"linearizable", at, msg + ": " + why})
		}
	}
	return res
}

// stuckAt names where the history stops making sense: the last operation
// of the longest linearizable prefix porcupine found, and the operation
// that could not follow it (of those left out, the one that returned
// first).
func stuckAt(hist []porcupine.Operation, info porcupine.LinearizationInfo) (string, int64) {
	var best []porcupine.Operation
	for _, part := range info.PartialLinearizationsOperations() {
		for _, lin := range part {
			if len(lin) > len(best) {
				best = lin
			}
		}
	}
	type id struct {
		client        int
		call, return_ int64
	}
	in := map[id]bool{}
	for _, o := range best {
		in[id{o.ClientId, o.Call, o.Return}] = true
	}
	var blocked *porcupine.Operation
	for i := range hist {
		o := &hist[i]
		if !in[id{o.ClientId, o.Call, o.Return}] && (blocked == nil || o.Return < blocked.Return) {
			blocked = o
		}
	}
	msg := fmt.Sprintf("%d of %d operations linearize", len(best), len(hist))
	if len(best) > 0 {
		last := best[len(best)-1]
		msg += fmt.Sprintf("; the last is %v [%v..%v]", last.Input.(Op), time.Duration(last.Call), ret(last.Return))
	}
	at := int64(0)
	if blocked != nil {
		msg += fmt.Sprintf("; none can follow with %v [%v..%v]", blocked.Input.(Op), time.Duration(blocked.Call), ret(blocked.Return))
		at = blocked.Call
	}
	return msg, at
}

// ret prints a return time.
func ret(t int64) string {
	if t == Never {
		return "never"
	}
	return time.Duration(t).String()
}

// Row is one line of the table.
type Row struct {
	Kind       Kind
	Runs       int
	Ops        int
	Violations int
	Recover    []time.Duration
}

// Table summarizes runs by fault kind: operations are counted for the
// fault whose span (start to recovery) holds their call; violations by
// the fault whose span holds the offending call (for a linearizability
// violation: the call of the first operation that cannot be linearized).
func Table(runs []FaultRun, ops []Op, res Result) []Row {
	rows := map[Kind]*Row{}
	for _, k := range AllKinds {
		rows[k] = &Row{Kind: k}
	}
	at := func(t int64) *Row {
		for _, r := range runs {
			if t >= r.Start && t <= r.Recovered {
				return rows[r.Kind]
			}
		}
		return nil
	}
	for _, r := range runs {
		row := rows[r.Kind]
		row.Runs++
		row.Recover = append(row.Recover, time.Duration(r.Recovered-r.Healed))
	}
	for _, o := range ops {
		if row := at(o.Call); row != nil {
			row.Ops++
		}
	}
	for _, v := range res.Violations {
		if row := at(v.At); row != nil {
			row.Violations++
		}
	}
	out := make([]Row, 0, len(rows))
	for _, k := range AllKinds {
		out = append(out, *rows[k])
	}
	return out
}

// Quantile returns the q-quantile (nearest rank) of ds; 0 when empty.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Format prints the table, then the total with the linearizability
// verdicts.
func Format(rows []Row, res Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-18s %5s %8s %10s %12s %12s\n", "fault", "runs", "ops", "violations", "recover p50", "recover p99")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-18s %5d %8d %10d %12s %12s\n", r.Kind, r.Runs, r.Ops, r.Violations,
			Quantile(r.Recover, 0.5).Round(time.Millisecond), Quantile(r.Recover, 0.99).Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "%-18s %5s %8d %10d\n", "all (whole run)", "", res.Ops, len(res.Violations))
	fmt.Fprintf(&b, "  unknown-outcome writes: %d never took effect, %d did; acquires: %d never took effect, %d did; releases: %d never took effect, %d bounded by their retry\n",
		res.Dropped, res.Resolved, res.AcquiresDropped, res.AcquiresResolved, res.ReleasesDropped, res.ReleasesBounded)
	names := make([]string, 0, len(res.Linear))
	for n := range res.Linear {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  linearizability %-24s %s\n", n, res.Linear[n])
	}
	for _, v := range res.Violations {
		fmt.Fprintf(&b, "  VIOLATION %s: %s\n", v.Check, v.Msg)
	}
	return b.String()
}

// keepDir returns a directory for failure artifacts that outlives the
// test (named in the output), or "" if none can be made.
func keepDir(seed int64) string {
	dir, err := os.MkdirTemp("", fmt.Sprintf("drover-chaos-%d-", seed))
	if err != nil {
		return ""
	}
	return dir
}

func removeAll(dir string) error { return os.RemoveAll(dir) }

// SaveHistory writes ops as JSON into dir/history.json and returns the
// path; LoadHistory reads it back.
func SaveHistory(dir string, ops []Op) (string, error) {
	b, err := json.Marshal(ops)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "history.json")
	return path, os.WriteFile(path, b, 0o644)
}

// LoadHistory reads a history SaveHistory wrote.
func LoadHistory(path string) ([]Op, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ops []Op
	return ops, json.Unmarshal(b, &ops)
}

// Timeline lists the faults with their run-clock spans, to place a
// violation's times.
func Timeline(runs []FaultRun) string {
	var b strings.Builder
	for i, r := range runs {
		fmt.Fprintf(&b, "  fault %2d %-18s %10v .. healed %10v .. recovered %10v\n", i, r.Kind,
			time.Duration(r.Start).Round(time.Millisecond), time.Duration(r.Healed).Round(time.Millisecond), time.Duration(r.Recovered).Round(time.Millisecond))
	}
	return b.String()
}
