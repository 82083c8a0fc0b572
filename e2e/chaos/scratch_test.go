package chaos

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// a simulated lock service with 4 workers, overlapping ops, some unknown acquires
func simHistory(n int, seed int64) []Op {
	rng := rand.New(rand.NewSource(seed))
	var ops []Op
	holder, holderTok := "", ""
	at := int64(0)
	for i := 0; i < n; i++ {
		w := rng.Intn(4)
		tok := fmt.Sprintf("t%d", i)
		at += 10
		switch {
		case holder == "":
			id := fmt.Sprintf("L%d", i)
			if rng.Intn(5) == 0 { // unknown
				if rng.Intn(2) == 0 {
					holder, holderTok = id, tok
				}
				ops = append(ops, tacq(w, tok, "", Unknown, at, 0))
			} else {
				holder, holderTok = id, tok
				ops = append(ops, tacq(w, tok, id, OK, at, at+15))
			}
		default:
			switch rng.Intn(3) {
			case 0:
				ops = append(ops, tacq(w, tok, "", Fail, at, at+15))
			case 1:
				ops = append(ops, tread(w, holderTok, holder, at, at+15))
			default:
				ops = append(ops, tread(w, holderTok, holder, at, at+3), rel(w, holder, OK, at+5, at+15))
				holder, holderTok = "", ""
			}
		}
	}
	ops = append(ops, tread(9, holderTok, holder, at+100, at+101))
	return ops
}

func TestScratchOpen(t *testing.T) {
	long := simHistory(4000, 1)
	check := func(name string, h []Op) {
		known := map[string]bool{}
		for _, o := range h {
			if o.Kind == LockAcquire && o.Outcome == OK {
				known[o.LockID] = true
			}
		}
		start := time.Now()
		got := porcupine.CheckOperationsTimeout(LockModel(known), toPorcupine(h, LockAcquire, LockRelease, LockRead), 20*time.Second)
		t.Logf("%s: %v in %v", name, got, time.Since(start))
	}
	check("open", long)
	n, d, r := ResolveAcquires(long)
	t.Logf("dropped %d resolved %d", d, r)
	check("narrowed", n)
}
