package chaos

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"time"
)

// OpKind is what an operation did.
type OpKind int

// The recorded operations.
const (
	RegRead     OpKind = iota // default read of a register variable
	RegWrite                  // check-and-set write of a register variable
	StaleRead                 // ?stale read of a register variable
	LockAcquire               // variable lock acquire
	LockRelease               // variable lock release
	LockRead                  // default read of the lock variable's holder
)

var opNames = map[OpKind]string{
	RegRead: "read", RegWrite: "cas", StaleRead: "stale-read",
	LockAcquire: "acquire", LockRelease: "release", LockRead: "lock-read",
}

func (k OpKind) String() string { return opNames[k] }

// Outcome is what the caller learned.
type Outcome int

// Outcomes. Fail is definite (a refused check-and-set or lock, a read of
// a missing variable is OK with value ""); Unknown is a timeout or error:
// the operation may or may not have taken effect.
const (
	OK Outcome = iota
	Fail
	Unknown
)

func (o Outcome) String() string { return [...]string{"ok", "fail", "unknown"}[o] }

// Never is the return time of an operation whose outcome is unknown: it
// may take effect at any time after its call.
const Never = int64(math.MaxInt64)

// Op is one recorded operation. Times are nanoseconds since the run began.
type Op struct {
	Worker int
	Server int // index of the server it was sent to
	Kind   OpKind
	Key    string
	// Expect is the value a CAS expects ("" for absent: the CAS was made
	// with the index the worker last read with that value).
	Expect string
	// Value is the value a CAS writes or a read returned ("" absent); for
	// the lock, the token an acquire writes into the lock variable's items
	// or a lock read returned (see ResolveAcquires).
	Value string
	// LockID is the lock an acquire got, a release names, a read saw
	// ("" free).
	LockID  string
	Outcome Outcome
	Call    int64
	Return  int64 // Never when Outcome is Unknown
}

func (o Op) String() string {
	switch o.Kind {
	case RegWrite:
		return fmt.Sprintf("w%d@s%d cas(%s: %q->%q) %s", o.Worker, o.Server, o.Key, o.Expect, o.Value, o.Outcome)
	case RegRead, StaleRead:
		return fmt.Sprintf("w%d@s%d %s(%s)=%q", o.Worker, o.Server, o.Kind, o.Key, o.Value)
	case LockAcquire, LockRead:
		return fmt.Sprintf("w%d@s%d %s(%s by %s) %s", o.Worker, o.Server, o.Kind, short(o.LockID), o.Value, o.Outcome)
	default:
		return fmt.Sprintf("w%d@s%d %s(%s) %s", o.Worker, o.Server, o.Kind, short(o.LockID), o.Outcome)
	}
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// Recorder collects operations from concurrent workers.
type Recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []Op
}

// NewRecorder starts the run's clock.
func NewRecorder(start time.Time) *Recorder { return &Recorder{start: start} }

// Since is t on the run's clock.
func (r *Recorder) Since(t time.Time) int64 { return int64(t.Sub(r.start)) }

// Now is the run's clock now.
func (r *Recorder) Now() int64 { return r.Since(time.Now()) }

// Add records op; an Unknown op's return time is set to Never.
func (r *Recorder) Add(op Op) {
	if op.Outcome == Unknown {
		op.Return = Never
	}
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// Ops returns a copy of the history, ordered by call time.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	out := append([]Op(nil), r.ops...)
	r.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

// Window is a span of time (run clock) during which server Server was
// cut off from its majority, under fault Kind.
type Window struct {
	Kind     Kind
	Server   int // -1: no server is cut off (pause, kill, loss)
	From, To int64
	// ClaimsLead is whether the cut-off server still named itself the
	// leader at To, the end of the hold.
	ClaimsLead bool
}

// Violation is a broken invariant.
type Violation struct {
	Check string
	At    int64 // run clock of the offending operation's call
	Msg   string
}

// CheckStale checks that every ?stale read returned a value some CAS
// tried to write, invoked before the read returned: stale reads may be
// old, never from the future.
func CheckStale(ops []Op) []Violation {
	callOf := map[string]int64{}
	for _, o := range ops {
		if o.Kind == RegWrite {
			callOf[o.Key+"\x00"+o.Value] = o.Call
		}
	}
	var out []Violation
	for _, o := range ops {
		if o.Kind != StaleRead || o.Outcome != OK || o.Value == "" {
			continue
		}
		call, ok := callOf[o.Key+"\x00"+o.Value]
		switch {
		case !ok:
			out = append(out, Violation{"stale-never-future", o.Call, fmt.Sprintf("%v: no write of this value was ever made", o)})
		case call > o.Return:
			out = append(out, Violation{"stale-never-future", o.Call, fmt.Sprintf("%v: returned at %v, before the write was invoked at %v", o, time.Duration(o.Return), time.Duration(call))})
		}
	}
	return out
}

// acknowledges reports whether op is a write the server acknowledged.
func acknowledges(o Op) bool {
	return o.Outcome == OK && (o.Kind == RegWrite || o.Kind == LockAcquire || o.Kind == LockRelease)
}

// CheckMinority checks that no write sent to a server while it was cut
// off from its majority was acknowledged before the cut healed: the
// server can commit nothing alone, and a forwarded write cannot leave it.
func CheckMinority(ops []Op, windows []Window) []Violation {
	var out []Violation
	for _, w := range windows {
		if w.Server < 0 {
			continue
		}
		for _, o := range ops {
			if o.Server == w.Server && acknowledges(o) && o.Call >= w.From && o.Return <= w.To {
				out = append(out, Violation{"minority-acks-nothing", o.Call, fmt.Sprintf("%v acknowledged by s%d while it was cut off (%s, %v..%v)", o, w.Server, w.Kind, time.Duration(w.From), time.Duration(w.To))})
			}
		}
	}
	return out
}

// CheckStepDown checks that a server cut off from its majority no longer
// names itself the leader at the end of the hold: a leader that cannot
// reach a quorum steps down within its lease (holds are seconds, leases
// half a second).
func CheckStepDown(windows []Window) []Violation {
	var out []Violation
	for _, w := range windows {
		if w.Server >= 0 && w.ClaimsLead {
			out = append(out, Violation{"minority-leader-steps-down", w.To, fmt.Sprintf("s%d still named itself the leader at the end of %s (%v..%v)", w.Server, w.Kind, time.Duration(w.From), time.Duration(w.To))})
		}
	}
	return out
}

// ResolveUnknown narrows the CAS writes of unknown outcome before the
// linearizability check (each left open to the end of time multiplies the
// checker's work). Values are unique per write, and the history ends with
// a read of every register through every server, so:
//   - a write whose value nothing ever observed (no read returned it, no
//     acknowledged CAS expected it) never took effect: had it, the
//     register would have held its value until a CAS expecting it changed
//     it, or to the final reads. It is dropped.
//   - a write whose value was observed took effect before the first
//     observer returned: it becomes OK with that return time.
//
// It returns the new history and how many writes it dropped and resolved.
func ResolveUnknown(ops []Op) (out []Op, dropped, resolved int) {
	seenBy := map[string]int64{} // key+value -> earliest return of an observer
	see := func(key, value string, at int64) {
		k := key + "\x00" + value
		if cur, ok := seenBy[k]; !ok || at < cur {
			seenBy[k] = at
		}
	}
	for _, o := range ops {
		switch {
		case (o.Kind == RegRead || o.Kind == StaleRead) && o.Outcome == OK && o.Value != "":
			see(o.Key, o.Value, o.Return)
		case o.Kind == RegWrite && o.Outcome == OK && o.Expect != "":
			see(o.Key, o.Expect, o.Return)
		}
	}
	for _, o := range ops {
		if o.Kind == RegWrite && o.Outcome == Unknown {
			at, ok := seenBy[o.Key+"\x00"+o.Value]
			if !ok {
				dropped++
				continue
			}
			o.Outcome, o.Return = OK, max(at, o.Call)
			resolved++
		}
		out = append(out, o)
	}
	return out, dropped, resolved
}

// ResolveReleases narrows lock releases of unknown outcome by the same
// worker's retry of the same release (workers retry until they learn an
// outcome). Lock IDs are unique, so the first attempt can only take
// effect while the lock is held under its ID:
//   - the retry succeeded: the lock was still held under the ID, so the
//     first attempt had not taken effect, and after the retry it cannot.
//     It is dropped.
//   - the retry was refused: the first attempt took effect before the
//     retry did, or never. Its return time becomes the retry's; its
//     outcome stays unknown.
//
// ops must be ordered by call time.
func ResolveReleases(ops []Op) (out []Op, dropped, bounded int) {
	next := make([]int, len(ops)) // index of the same worker's next op, -1 none
	last := map[int]int{}
	for i := len(ops) - 1; i >= 0; i-- {
		if j, ok := last[ops[i].Worker]; ok {
			next[i] = j
		} else {
			next[i] = -1
		}
		last[ops[i].Worker] = i
	}
	// retryOf follows the chain of unknown retries to the first definite
	// one (or -1).
	retryOf := func(i int) int {
		for j := next[i]; j >= 0; j = next[j] {
			o := ops[j]
			if o.Kind != LockRelease || o.Key != ops[i].Key || o.LockID != ops[i].LockID {
				return -1
			}
			if o.Outcome != Unknown {
				return j
			}
		}
		return -1
	}
	for i, o := range ops {
		if o.Kind == LockRelease && o.Outcome == Unknown {
			if j := retryOf(i); j >= 0 {
				if ops[j].Outcome == OK {
					dropped++
					continue
				}
				o.Return = ops[j].Return
				bounded++
			}
		}
		out = append(out, o)
	}
	return out, dropped, bounded
}

// ResolveAcquires narrows lock acquires of unknown outcome by the token
// each acquire writes into the lock variable's items (Value of an acquire;
// a lock read returns the token stored with the holder in its Value).
// Tokens are unique per acquire and only an acquire that takes the lock
// writes one, so:
//   - an acquire whose token some read returned took effect before the
//     first such read returned. When a read saw the lock held under the
//     token, the acquire becomes OK with that lock ID (its ghost is named);
//     otherwise only its return time is bounded.
//   - an acquire whose token no read returned never took effect: had it,
//     the lock would have stayed held under an ID only a read can learn
//     (a release needs the ID, the lock outlives the run) until such a
//     read, or to the reads of the lock through every server that end the
//     history. It is dropped.
//
// It returns the new history and how many acquires it dropped and resolved
// (named or bounded).
func ResolveAcquires(ops []Op) (out []Op, dropped, resolved int) {
	type seen struct {
		at     int64  // earliest return of a read that returned the token
		heldAt int64  // earliest return of a read that saw it hold the lock
		lockID string // the lock ID that read saw
	}
	byToken := map[string]*seen{}
	for _, o := range ops {
		if o.Kind != LockRead || o.Outcome != OK || o.Value == "" {
			continue
		}
		s := byToken[o.Key+"\x00"+o.Value]
		if s == nil {
			s = &seen{at: o.Return, heldAt: Never}
			byToken[o.Key+"\x00"+o.Value] = s
		}
		s.at = min(s.at, o.Return)
		if o.LockID != "" && o.Return < s.heldAt {
			s.heldAt, s.lockID = o.Return, o.LockID
		}
	}
	for _, o := range ops {
		if o.Kind == LockAcquire && o.Outcome == Unknown && o.Value != "" {
			s := byToken[o.Key+"\x00"+o.Value]
			if s == nil {
				dropped++
				continue
			}
			resolved++
			if s.lockID != "" {
				o.Outcome, o.LockID, o.Return = OK, s.lockID, max(s.heldAt, o.Call)
			} else {
				o.Return = max(s.at, o.Call)
			}
		}
		out = append(out, o)
	}
	return out, dropped, resolved
}
