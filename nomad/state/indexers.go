package state

import (
	"fmt"

	"github.com/drover-project/drover/nomad/structs"
)

// allocField indexes one string field of an *structs.Allocation. It builds
// exactly the keys memdb.StringFieldIndex builds (the value followed by a
// zero byte; an empty value is missing), without reflection: a system
// job's plan inserts one allocation per node into every index.
type allocField struct {
	name string // the field's name, for errors
	get  func(*structs.Allocation) string
	// room is spare capacity for what memdb appends to the key of a
	// non-unique index (the allocation's ID and a zero byte), so that the
	// append does not copy the key.
	room int
}

func (f allocField) FromObject(obj any) (bool, []byte, error) {
	a, ok := obj.(*structs.Allocation)
	if !ok {
		return false, nil, fmt.Errorf("state: index %s: object is %T, not an allocation", f.name, obj)
	}
	v := f.get(a)
	if v == "" {
		return false, nil, nil
	}
	key := make([]byte, len(v)+1, len(v)+1+f.room)
	copy(key, v)
	return true, key, nil
}

func (f allocField) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("must provide only a single argument")
	}
	s, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("argument must be a string: %#v", args[0])
	}
	key := make([]byte, len(s)+1)
	copy(key, s)
	return key, nil
}

// PrefixFromArgs serves the "_prefix" form of the index: the key without
// its zero byte.
func (f allocField) PrefixFromArgs(args ...any) ([]byte, error) {
	key, err := f.FromArgs(args...)
	if err != nil {
		return nil, err
	}
	return key[:len(key)-1], nil
}

// uuidKey is the length of a UUID followed by a zero byte.
const uuidKey = 37

var (
	allocIDField        = allocField{"ID", func(a *structs.Allocation) string { return a.ID }, 0}
	allocNodeField      = allocField{"NodeID", func(a *structs.Allocation) string { return a.NodeID }, uuidKey}
	allocNamespaceField = allocField{"Namespace", func(a *structs.Allocation) string { return a.Namespace }, 0}
	allocJobField       = allocField{"JobID", func(a *structs.Allocation) string { return a.JobID }, 0}
)
