package chaos

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// toPorcupine converts ops of the given kinds to porcupine operations (the
// Op itself is both input and output). Reads whose outcome is not OK are
// left out: a read that answered nothing changed nothing.
func toPorcupine(ops []Op, kinds ...OpKind) []porcupine.Operation {
	want := map[OpKind]bool{}
	for _, k := range kinds {
		want[k] = true
	}
	var out []porcupine.Operation
	for _, o := range ops {
		if !want[o.Kind] {
			continue
		}
		if (o.Kind == RegRead || o.Kind == LockRead) && o.Outcome != OK {
			continue
		}
		out = append(out, porcupine.Operation{ClientId: o.Worker, Input: o, Output: o, Call: o.Call, Return: o.Return})
	}
	return out
}

// RegisterModel is a check-and-set register per key. State is the value
// ("" absent). A CAS that was definitely refused leaves the state alone
// and requires it differ from what the CAS expected; one of unknown outcome
// takes effect exactly when the state is what it expected (a CAS is
// deterministic given the state: linearized last, it is as if it never
// happened).
var RegisterModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(Op).Key
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() interface{} { return "" },
	Step: func(state, input, _ interface{}) (bool, interface{}) {
		s, o := state.(string), input.(Op)
		switch o.Kind {
		case RegRead:
			return s == o.Value, s
		case RegWrite:
			switch o.Outcome {
			case OK:
				return s == o.Expect, o.Value
			case Fail:
				return s != o.Expect, s
			default:
				if s == o.Expect {
					return true, o.Value
				}
				return true, s
			}
		}
		return false, s
	},
	DescribeOperation: func(input, _ interface{}) string { return input.(Op).String() },
	DescribeState:     func(state interface{}) string { return fmt.Sprintf("%q", state) },
}

// ghost is the lock state "held through an acquire of unknown outcome,
// whose lock ID nobody was told".
const ghost = "?"

// LockModel is a lock over one variable. State is the holder's lock ID
// ("" free, ghost for an unknown acquire that took). known are the lock
// IDs acquires returned: a read that sees any other ID saw a ghost's.
func LockModel(known map[string]bool) porcupine.Model {
	isGhost := func(id string) bool { return id != "" && !known[id] }
	holds := func(s, id string) bool { return s == id || (s == ghost && isGhost(id)) }
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{""} },
		Step: func(state, input, _ interface{}) []interface{} {
			s, o := state.(string), input.(Op)
			one := func(ok bool, next string) []interface{} {
				if !ok {
					return nil
				}
				return []interface{}{next}
			}
			switch o.Kind {
			case LockAcquire:
				switch o.Outcome {
				case OK:
					return one(s == "", o.LockID)
				case Fail:
					return one(s != "", s)
				default:
					if s == "" {
						return []interface{}{"", ghost}
					}
					return []interface{}{s}
				}
			case LockRelease:
				switch o.Outcome {
				case OK:
					return one(holds(s, o.LockID), "")
				case Fail:
					return one(s != o.LockID, s)
				default:
					if holds(s, o.LockID) {
						return []interface{}{s, ""}
					}
					return []interface{}{s}
				}
			case LockRead:
				if o.LockID == "" || !isGhost(o.LockID) {
					return one(s == o.LockID, s)
				}
				return one(s == o.LockID || s == ghost, o.LockID)
			}
			return nil
		},
		DescribeOperation: func(input, _ interface{}) string { return input.(Op).String() },
		DescribeState:     func(state interface{}) string { return fmt.Sprintf("%q", state) },
	}
	return nm.ToModel()
}
