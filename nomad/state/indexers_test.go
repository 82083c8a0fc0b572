package state

import (
	"bytes"
	"testing"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// The allocation indexers build the keys memdb.StringFieldIndex builds,
// from objects and from arguments, so a store restored from a snapshot
// indexes exactly as before.
func TestAllocField_SameKeysAsStringFieldIndex(t *testing.T) {
	allocs := []*structs.Allocation{
		{ID: "a1", NodeID: "n1", Namespace: "default", JobID: "web", EvalID: "e1", DeploymentID: "d1"},
		{ID: "a2", Namespace: "prod", JobID: "api"}, // no node, eval or deployment: missing
	}
	for _, f := range []allocField{allocIDField, allocNodeField, allocNamespaceField, allocJobField} {
		ref := &memdb.StringFieldIndex{Field: f.name}
		for _, a := range allocs {
			okR, keyR, errR := ref.FromObject(a)
			ok, key, err := f.FromObject(a)
			if ok != okR || !bytes.Equal(key, keyR) || (err == nil) != (errR == nil) {
				t.Fatalf("%s of %s: got %v %q %v, StringFieldIndex %v %q %v", f.name, a.ID, ok, key, err, okR, keyR, errR)
			}
		}
		for _, args := range [][]any{{"x"}, {""}, {1}, {"a", "b"}} {
			keyR, errR := ref.FromArgs(args...)
			key, err := f.FromArgs(args...)
			if !bytes.Equal(key, keyR) || (err == nil) != (errR == nil) {
				t.Fatalf("%s args %v: got %q %v, StringFieldIndex %q %v", f.name, args, key, err, keyR, errR)
			}
			pR, errR := ref.PrefixFromArgs(args...)
			p, err := f.PrefixFromArgs(args...)
			if !bytes.Equal(p, pR) || (err == nil) != (errR == nil) {
				t.Fatalf("%s prefix args %v: got %q %v, StringFieldIndex %q %v", f.name, args, p, err, pR, errR)
			}
		}
	}
	if _, _, err := allocIDField.FromObject(&structs.Job{}); err == nil {
		t.Fatal("a job indexed as an allocation without error")
	}
}
