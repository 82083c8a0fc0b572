package chaos

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func w(worker int, key, expect, value string, out Outcome, call, ret int64) Op {
	if out == Unknown {
		ret = Never
	}
	return Op{Worker: worker, Kind: RegWrite, Key: key, Expect: expect, Value: value, Outcome: out, Call: call, Return: ret}
}

func r(worker int, key, value string, call, ret int64) Op {
	return Op{Worker: worker, Kind: RegRead, Key: key, Value: value, Call: call, Return: ret}
}

func checkReg(ops []Op) porcupine.CheckResult {
	return porcupine.CheckOperationsTimeout(RegisterModel, toPorcupine(ops, RegRead, RegWrite), 10*time.Second)
}

func TestRegisterModel(t *testing.T) {
	cases := []struct {
		name string
		ops  []Op
		want porcupine.CheckResult
	}{
		{"sequential", []Op{w(0, "k", "", "a", OK, 0, 1), r(1, "k", "a", 2, 3), w(1, "k", "a", "b", OK, 4, 5), r(0, "k", "b", 6, 7)}, porcupine.Ok},
		{"acknowledged write lost", []Op{w(0, "k", "", "a", OK, 0, 1), r(1, "k", "", 2, 3)}, porcupine.Illegal},
		{"read from a follower behind the leader", []Op{w(0, "k", "", "a", OK, 0, 1), w(0, "k", "a", "b", OK, 2, 3), r(1, "k", "a", 4, 5)}, porcupine.Illegal},
		{"read of a value before its write was invoked", []Op{r(1, "k", "a", 0, 1), w(0, "k", "", "a", OK, 2, 3)}, porcupine.Illegal},
		{"concurrent read may see either", []Op{w(0, "k", "", "a", OK, 0, 10), r(1, "k", "", 1, 2), r(2, "k", "a", 3, 4)}, porcupine.Ok},
		{"read goes back after seeing new", []Op{w(0, "k", "", "a", OK, 0, 10), r(1, "k", "a", 1, 2), r(2, "k", "", 3, 4)}, porcupine.Illegal},
		{"both CAS on one value acknowledged", []Op{w(0, "k", "", "a", OK, 0, 1), w(1, "k", "a", "b", OK, 2, 5), w(2, "k", "a", "c", OK, 2, 5)}, porcupine.Illegal},
		{"refused CAS whose expectation held", []Op{w(0, "k", "", "a", OK, 0, 1), w(1, "k", "a", "b", Fail, 2, 3), r(1, "k", "a", 4, 5)}, porcupine.Illegal},
		{"refused CAS after another won", []Op{w(0, "k", "", "a", OK, 0, 1), w(1, "k", "a", "b", OK, 2, 3), w(2, "k", "a", "c", Fail, 4, 5)}, porcupine.Ok},
		{"unknown CAS that took effect late", []Op{w(0, "k", "", "a", Unknown, 0, 0), r(1, "k", "", 1, 2), r(1, "k", "a", 30, 31)}, porcupine.Ok},
		{"unknown CAS that never took effect", []Op{w(0, "k", "", "a", Unknown, 0, 0), r(1, "k", "", 1, 2), w(1, "k", "", "b", OK, 3, 4), r(1, "k", "b", 5, 6)}, porcupine.Ok},
		{"unknown CAS cannot take effect against another value", []Op{w(1, "k", "", "b", OK, 0, 1), w(0, "k", "", "a", Unknown, 2, 0), r(1, "k", "a", 5, 6)}, porcupine.Illegal},
		{"keys are independent", []Op{w(0, "k", "", "a", OK, 0, 1), r(1, "j", "", 2, 3)}, porcupine.Ok},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := checkReg(c.ops); got != c.want {
				t.Fatalf("got %s, want %s for %v", got, c.want, c.ops)
			}
		})
	}
}

func acq(worker int, id string, out Outcome, call, ret int64) Op {
	if out == Unknown {
		ret = Never
	}
	return Op{Worker: worker, Kind: LockAcquire, Key: "l", LockID: id, Outcome: out, Call: call, Return: ret}
}

func rel(worker int, id string, out Outcome, call, ret int64) Op {
	if out == Unknown {
		ret = Never
	}
	return Op{Worker: worker, Kind: LockRelease, Key: "l", LockID: id, Outcome: out, Call: call, Return: ret}
}

func lread(worker int, id string, call, ret int64) Op {
	return Op{Worker: worker, Kind: LockRead, Key: "l", LockID: id, Call: call, Return: ret}
}

func TestLockModel(t *testing.T) {
	cases := []struct {
		name string
		ops  []Op
		want porcupine.CheckResult
	}{
		{"one at a time", []Op{acq(0, "A", OK, 0, 1), rel(0, "A", OK, 2, 3), acq(1, "B", OK, 4, 5), rel(1, "B", OK, 6, 7)}, porcupine.Ok},
		{"held by two at once", []Op{acq(0, "A", OK, 0, 1), acq(1, "B", OK, 2, 3), rel(0, "A", OK, 4, 5)}, porcupine.Illegal},
		{"refused while free", []Op{acq(0, "A", OK, 0, 1), rel(0, "A", OK, 2, 3), acq(1, "", Fail, 4, 5)}, porcupine.Illegal},
		{"refused while held", []Op{acq(0, "A", OK, 0, 1), acq(1, "", Fail, 2, 3), rel(0, "A", OK, 4, 5)}, porcupine.Ok},
		{"release of a lock not held", []Op{acq(0, "A", OK, 0, 1), rel(0, "A", OK, 2, 3), rel(0, "A", OK, 4, 5)}, porcupine.Illegal},
		{"read sees the holder", []Op{acq(0, "A", OK, 0, 1), lread(1, "A", 2, 3), rel(0, "A", OK, 4, 5), lread(1, "", 6, 7)}, porcupine.Ok},
		{"read sees a released lock", []Op{acq(0, "A", OK, 0, 1), rel(0, "A", OK, 2, 3), lread(1, "A", 4, 5)}, porcupine.Illegal},
		{"unknown acquire that took: a ghost, released by who found it", []Op{acq(0, "", Unknown, 0, 0), lread(0, "G", 2, 3), acq(1, "", Fail, 4, 5), rel(0, "G", OK, 6, 7), acq(1, "B", OK, 8, 9)}, porcupine.Ok},
		{"unknown acquire that never took", []Op{acq(0, "", Unknown, 0, 0), lread(0, "", 2, 3), acq(1, "B", OK, 4, 5)}, porcupine.Ok},
		{"a ghost does not excuse two grants", []Op{acq(0, "", Unknown, 0, 0), lread(0, "G", 2, 3), acq(1, "B", OK, 4, 5)}, porcupine.Illegal},
		{"unknown release that took", []Op{acq(0, "A", OK, 0, 1), rel(0, "A", Unknown, 2, 0), acq(1, "B", OK, 4, 5)}, porcupine.Ok},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			known := map[string]bool{}
			for _, o := range c.ops {
				if o.Kind == LockAcquire && o.Outcome == OK {
					known[o.LockID] = true
				}
			}
			got := porcupine.CheckOperationsTimeout(LockModel(known), toPorcupine(c.ops, LockAcquire, LockRelease, LockRead), 10*time.Second)
			if got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestCheckStale(t *testing.T) {
	stale := func(v string, call, ret int64) Op {
		return Op{Kind: StaleRead, Key: "k", Value: v, Call: call, Return: ret}
	}
	ops := []Op{
		w(0, "k", "", "a", OK, 10, 20),
		stale("", 0, 5),    // before anything: fine
		stale("", 30, 31),  // old: fine
		stale("a", 15, 16), // concurrent with the write: fine
		stale("a", 1, 5),   // returned before the write was invoked
		stale("z", 40, 41), // nobody wrote z
	}
	got := CheckStale(ops)
	if len(got) != 2 || got[0].At != 1 || got[1].At != 40 {
		t.Fatalf("violations %+v", got)
	}
}

func TestCheckMinority(t *testing.T) {
	win := []Window{{Kind: PartitionLeader, Server: 1, From: 100, To: 200}, {Kind: PauseLeader, Server: -1, From: 300, To: 400}}
	ops := []Op{
		{Kind: RegWrite, Server: 1, Outcome: OK, Call: 110, Return: 150},   // acknowledged by the cut-off server
		{Kind: RegWrite, Server: 1, Outcome: OK, Call: 90, Return: 150},    // invoked before the cut
		{Kind: RegWrite, Server: 1, Outcome: OK, Call: 110, Return: 250},   // answered after the heal
		{Kind: RegWrite, Server: 0, Outcome: OK, Call: 110, Return: 150},   // another server
		{Kind: RegWrite, Server: 1, Outcome: Fail, Call: 110, Return: 150}, // refused
		{Kind: RegRead, Server: 1, Outcome: OK, Call: 110, Return: 150},    // a read
		{Kind: LockAcquire, Server: 1, Outcome: OK, Call: 120, Return: 130},
		{Kind: RegWrite, Server: 1, Outcome: OK, Call: 310, Return: 350}, // no one cut off
	}
	got := CheckMinority(ops, win)
	if len(got) != 2 || got[0].At != 110 || got[1].At != 120 {
		t.Fatalf("violations %+v", got)
	}
}

func TestCheckStepDown(t *testing.T) {
	win := []Window{
		{Kind: PartitionLeader, Server: 1, From: 100, To: 200, ClaimsLead: true}, // still leads its minority
		{Kind: Asymmetric, Server: 0, From: 300, To: 400},                        // stepped down
		{Kind: PauseLeader, Server: -1, From: 500, To: 600, ClaimsLead: true},    // no one cut off: not judged
	}
	got := CheckStepDown(win)
	if len(got) != 1 || got[0].At != 200 || got[0].Check != "minority-leader-steps-down" {
		t.Fatalf("violations %+v", got)
	}
}

func TestSchedule(t *testing.T) {
	l := Limits{HoldMin: time.Second, HoldMax: 3 * time.Second, GapMin: 0, GapMax: time.Second}
	a, b := Schedule(7, 14, AllKinds, l), Schedule(7, 14, AllKinds, l)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gives another schedule")
	}
	if reflect.DeepEqual(a, Schedule(8, 14, AllKinds, l)) {
		t.Fatal("another seed gives the same schedule")
	}
	seen := map[Kind]int{}
	for i, f := range a {
		seen[f.Kind]++
		if f.Hold < l.HoldMin || f.Hold > l.HoldMax || f.Gap < l.GapMin || f.Gap > l.GapMax {
			t.Fatalf("fault %d out of limits: %+v", i, f)
		}
		if (f.Kind == Loss) != (f.Loss > 0) || f.Loss >= 1 {
			t.Fatalf("fault %d loss %v", i, f.Loss)
		}
	}
	for _, k := range AllKinds {
		if seen[k] < 2 { // 14 faults: two full rounds of seven
			t.Fatalf("kind %s drawn %d times in %v", k, seen[k], seen)
		}
	}
}

func TestTableAndQuantile(t *testing.T) {
	ms := time.Millisecond
	if q := Quantile([]time.Duration{5 * ms, 1 * ms, 3 * ms, 2 * ms, 4 * ms}, 0.5); q != 3*ms {
		t.Fatalf("p50 %v", q)
	}
	if q := Quantile([]time.Duration{5 * ms, 1 * ms}, 0.99); q != 5*ms {
		t.Fatalf("p99 %v", q)
	}
	runs := []FaultRun{{Kind: Loss, Start: 0, Healed: 10, Recovered: 15}, {Kind: Loss, Start: 20, Healed: 30, Recovered: 40}, {Kind: PauseLeader, Start: 50, Healed: 60, Recovered: 61}}
	ops := []Op{{Call: 1}, {Call: 25}, {Call: 55}, {Call: 45}}
	res := Result{Violations: []Violation{{Check: "stale-never-future", At: 55}, {Check: "linearizable", At: 25}}}
	rows := Table(runs, ops, res)
	byKind := map[Kind]Row{}
	for _, r := range rows {
		byKind[r.Kind] = r
	}
	if l := byKind[Loss]; l.Runs != 2 || l.Ops != 2 || l.Violations != 1 || !reflect.DeepEqual(l.Recover, []time.Duration{5, 10}) {
		t.Fatalf("loss row %+v", l)
	}
	if p := byKind[PauseLeader]; p.Runs != 1 || p.Ops != 1 || p.Violations != 1 {
		t.Fatalf("pause row %+v", p)
	}
}

func TestResolveUnknown(t *testing.T) {
	ops := []Op{
		w(0, "k", "", "a", Unknown, 0, 0), // observed by the read at 10..12
		w(1, "k", "", "b", Unknown, 1, 0), // never observed: never took effect
		w(2, "j", "", "a", Unknown, 2, 0), // another key: "a" of k does not count
		w(0, "k", "a", "c", OK, 5, 8),     // an acknowledged CAS expecting a observes it at 8
		r(1, "k", "a", 10, 12),
		w(1, "k", "zz", "d", Fail, 13, 14), // not unknown: kept as is
	}
	out, dropped, resolved := ResolveUnknown(ops)
	if dropped != 2 || resolved != 1 || len(out) != 4 {
		t.Fatalf("dropped %d resolved %d: %v", dropped, resolved, out)
	}
	if out[0].Value != "a" || out[0].Outcome != OK || out[0].Return != 8 {
		t.Fatalf("resolved write %+v", out[0])
	}
	// The narrowed history keeps the verdict of the original.
	lost := []Op{w(0, "k", "", "a", OK, 0, 1), w(1, "k", "a", "b", Unknown, 2, 0), r(1, "k", "a", 5, 6), r(1, "k", "b", 7, 8), r(1, "k", "a", 9, 10)}
	narrowed, _, _ := ResolveUnknown(lost)
	if checkReg(lost) != porcupine.Illegal || checkReg(narrowed) != porcupine.Illegal {
		t.Fatal("a value that comes back after being replaced must stay illegal")
	}
}

func TestResolveReleases(t *testing.T) {
	ops := []Op{
		acq(0, "A", OK, 0, 1),
		rel(0, "A", Unknown, 2, 0),
		rel(0, "A", OK, 3, 4), // the retry succeeded: the first never took effect
		acq(1, "B", OK, 5, 6),
		rel(1, "B", Unknown, 7, 0),
		rel(1, "B", Unknown, 8, 0),
		rel(1, "B", Fail, 9, 10), // refused: both earlier attempts end by 10
		acq(0, "C", OK, 11, 12),
		rel(0, "C", Unknown, 13, 0), // no retry: left open
	}
	out, dropped, bounded := ResolveReleases(ops)
	if dropped != 1 || bounded != 2 || len(out) != 8 {
		t.Fatalf("dropped %d bounded %d: %v", dropped, bounded, out)
	}
	if out[3].Return != 10 || out[4].Return != 10 || out[3].Outcome != Unknown || out[7].Return != Never {
		t.Fatalf("narrowed %v", out)
	}
	known := map[string]bool{"A": true, "B": true, "C": true}
	m := LockModel(known)
	if porcupine.CheckOperationsTimeout(m, toPorcupine(ops, LockAcquire, LockRelease), time.Second) != porcupine.Ok ||
		porcupine.CheckOperationsTimeout(m, toPorcupine(out, LockAcquire, LockRelease), time.Second) != porcupine.Ok {
		t.Fatal("a legal history stays legal")
	}
}

// tacq and tread are an acquire and a lock read carrying a token.
func tacq(worker int, token string, id string, out Outcome, call, ret int64) Op {
	o := acq(worker, id, out, call, ret)
	o.Value = token
	return o
}

func tread(worker int, token, id string, call, ret int64) Op {
	o := lread(worker, id, call, ret)
	o.Value, o.Outcome = token, OK
	return o
}

func TestResolveAcquires(t *testing.T) {
	ops := []Op{
		tacq(0, "t1", "", Unknown, 0, 0), // seen holding as G at 3: named, OK by 3
		tread(0, "t1", "G", 2, 3),
		rel(0, "G", OK, 4, 5),
		tacq(1, "t2", "", Unknown, 6, 0), // never seen: dropped
		tacq(1, "t3", "B", OK, 7, 8),     // not unknown: kept as is
		tread(0, "t3", "", 9, 10),        // a read after B's release: t3 kept its token
		rel(1, "B", OK, 8, 9),
		tacq(2, "t4", "", Unknown, 11, 0), // seen only released: bounded by 14, still unknown
		tread(2, "t4", "", 13, 14),
	}
	out, dropped, resolved := ResolveAcquires(ops)
	if dropped != 1 || resolved != 2 || len(out) != 8 {
		t.Fatalf("dropped %d resolved %d: %v", dropped, resolved, out)
	}
	if o := out[0]; o.Outcome != OK || o.LockID != "G" || o.Return != 3 {
		t.Fatalf("named acquire %+v", o)
	}
	if o := out[6]; o.Outcome != Unknown || o.Return != 14 {
		t.Fatalf("bounded acquire %+v", o)
	}

	check := func(ops []Op) porcupine.CheckResult {
		known := map[string]bool{}
		for _, o := range ops {
			if o.Kind == LockAcquire && o.Outcome == OK {
				known[o.LockID] = true
			}
		}
		return porcupine.CheckOperationsTimeout(LockModel(known), toPorcupine(ops, LockAcquire, LockRelease, LockRead), 10*time.Second)
	}
	// A named ghost held while another acquire is granted stays two holders.
	twice := []Op{tacq(0, "t1", "", Unknown, 0, 0), tread(1, "t1", "G", 2, 3), tacq(1, "t2", "B", OK, 4, 5)}
	if n, _, _ := ResolveAcquires(twice); check(twice) != porcupine.Illegal || check(n) != porcupine.Illegal {
		t.Fatal("a ghost and a grant at once must stay illegal")
	}
	// Narrowing only takes possibilities away: a refusal that only an
	// acquire nobody ever saw could explain is illegal once it is dropped
	// (left open, the checker may blame the refusal on it).
	vanished := []Op{tacq(0, "t1", "", Unknown, 0, 0), tacq(1, "t2", "", Fail, 2, 3)}
	if n, _, _ := ResolveAcquires(vanished); check(vanished) != porcupine.Ok || check(n) != porcupine.Illegal {
		t.Fatal("a refusal explained only by an acquire nobody saw must be caught once narrowed")
	}

	// A long history with many unknown acquires, as an hour under faults
	// leaves: left open, each multiplies the checker's work; narrowed, it
	// is decided.
	var long []Op
	at := int64(0)
	for i := 0; i < 3000; i++ {
		w := i % 3
		tok := fmt.Sprintf("t%d", i)
		switch i % 4 {
		case 0: // an unknown acquire that never took, then a read of a free lock
			long = append(long, tacq(w, tok, "", Unknown, at, 0), tread(w, "", "", at+1, at+2))
		case 1: // an unknown acquire that took, found and released
			id := fmt.Sprintf("G%d", i)
			long = append(long, tacq(w, tok, "", Unknown, at, 0), tread(w, tok, id, at+1, at+2), rel(w, id, OK, at+3, at+4))
		default: // granted and released
			id := fmt.Sprintf("L%d", i)
			long = append(long, tacq(w, tok, id, OK, at, at+1), rel(w, id, OK, at+2, at+3))
		}
		at += 5
	}
	n, dropped, resolved := ResolveAcquires(long)
	if dropped != 750 || resolved != 750 {
		t.Fatalf("long history: dropped %d resolved %d", dropped, resolved)
	}
	if got := check(n); got != porcupine.Ok { // Unknown: not decided within check's timeout
		t.Fatalf("narrowed long history: %v", got)
	}
}
