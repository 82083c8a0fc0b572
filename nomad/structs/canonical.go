package structs

import (
	"math"
	"reflect"
)

// DefaultNodePool is the node pool of jobs and nodes that name none.
const DefaultNodePool = "default"

// AllDatacenters is the datacenter pattern of jobs that name no datacenter:
// every datacenter of the region (as in Nomad ≥1.5).
const AllDatacenters = "*"

// Canonicalize fills the server-side defaults that api.Job.Canonicalize does
// not: Namespace and NodePool "default", and Datacenters ["*"] when empty.
// It runs after api.Job.Canonicalize on every submitted job. It sorts nothing
// and leaves nil maps nil. It is idempotent.
func (j *Job) Canonicalize() {
	if j == nil {
		return
	}
	if j.Namespace == "" {
		j.Namespace = DefaultNamespace
	}
	if j.NodePool == "" {
		j.NodePool = DefaultNodePool
	}
	if len(j.Datacenters) == 0 {
		j.Datacenters = []string{AllDatacenters}
	}
	for _, tg := range j.TaskGroups {
		if tg == nil {
			continue
		}
		for _, t := range tg.Tasks {
			if t != nil {
				t.canonicalizeIdentities()
			}
		}
	}
}

// SpecChanged reports whether other differs from j in anything the user
// submitted. Server-set fields (Status, StatusDescription, Stable, Version,
// SubmitTime, VersionTag and the raft indexes) are ignored; Stop is part of the spec.
//
// Nil and empty maps and slices compare equal, and numbers inside task driver
// configs compare by value whatever their Go type (a config decoded from JSON
// holds float64, the same config read back from raft holds int64), so a
// resubmission of an unchanged job never counts as a change.
func (j *Job) SpecChanged(other *Job) bool {
	if j == nil || other == nil {
		return j != other
	}
	a, b := *j, *other
	a.clearServerFields()
	b.clearServerFields()
	return !specEqual(reflect.ValueOf(&a), reflect.ValueOf(&b))
}

// clearServerFields zeroes the fields the server sets on a stored job. j must
// be a shallow copy: only top-level value fields are touched.
func (j *Job) clearServerFields() {
	j.Status = ""
	j.StatusDescription = ""
	j.Stable = false
	j.Version = 0
	j.SubmitTime = 0
	j.CreateIndex = 0
	j.ModifyIndex = 0
	j.JobModifyIndex = 0
	j.VersionTag = nil
}

// specEqual is a deep equality for job specifications: like reflect.DeepEqual
// except that nil and empty maps or slices are equal, and numbers held in
// interfaces compare by numeric value across Go types.
func specEqual(a, b reflect.Value) bool {
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid()
	}
	if a.Kind() == reflect.Interface || b.Kind() == reflect.Interface {
		return interfaceEqual(a, b)
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return specEqual(a.Elem(), b.Elem())
	case reflect.Struct:
		if !hasExportedFields(a.Type()) {
			return a.Interface() == b.Interface()
		}
		for i := range a.NumField() {
			if !a.Type().Field(i).IsExported() {
				continue
			}
			if !specEqual(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !specEqual(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		iter := a.MapRange()
		for iter.Next() {
			bv := b.MapIndex(iter.Key())
			if !bv.IsValid() || !specEqual(iter.Value(), bv) {
				return false
			}
		}
		return true
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return a.IsNil() && b.IsNil()
	default:
		return a.Equal(b)
	}
}

// interfaceEqual compares two values of which at least one is an interface:
// it unwraps both and compares the dynamic values.
func interfaceEqual(a, b reflect.Value) bool {
	for a.Kind() == reflect.Interface {
		if a.IsNil() {
			return isNilish(b)
		}
		a = a.Elem()
	}
	for b.Kind() == reflect.Interface {
		if b.IsNil() {
			return isNilish(a)
		}
		b = b.Elem()
	}
	if x, ok := numberOf(a); ok {
		y, ok := numberOf(b)
		return ok && x == y
	}
	if a.Type() != b.Type() {
		// []any versus []map[string]any and similar shapes of the same data.
		if a.Kind() == reflect.Slice && b.Kind() == reflect.Slice {
			return sameSliceElems(a, b)
		}
		if a.Kind() == reflect.Map && b.Kind() == reflect.Map &&
			a.Type().Key() == b.Type().Key() {
			return sameMapElems(a, b)
		}
		return false
	}
	return specEqual(a, b)
}

func sameSliceElems(a, b reflect.Value) bool {
	if a.Len() != b.Len() {
		return false
	}
	for i := range a.Len() {
		if !interfaceEqual(asInterface(a.Index(i)), asInterface(b.Index(i))) {
			return false
		}
	}
	return true
}

func sameMapElems(a, b reflect.Value) bool {
	if a.Len() != b.Len() {
		return false
	}
	iter := a.MapRange()
	for iter.Next() {
		bv := b.MapIndex(iter.Key())
		if !bv.IsValid() || !interfaceEqual(asInterface(iter.Value()), asInterface(bv)) {
			return false
		}
	}
	return true
}

// asInterface wraps v in an interface value so that interfaceEqual accepts it.
func asInterface(v reflect.Value) reflect.Value {
	if v.Kind() == reflect.Interface {
		return v
	}
	w := reflect.New(reflect.TypeFor[any]()).Elem()
	w.Set(v)
	return w
}

// isNilish reports whether v is a nil interface, pointer, map or slice.
func isNilish(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer, reflect.Map, reflect.Slice:
		return v.IsNil()
	}
	return false
}

// number is a numeric value normalised for comparison across Go types.
type number struct {
	f   float64
	i   int64
	u   uint64
	neg bool // for integers: the value is negative (held in i)
	int bool // the value is an exact integer held in i or u
}

// numberOf normalises an integer or float value; ok is false for other kinds.
func numberOf(v reflect.Value) (n number, ok bool) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i := v.Int()
		if i < 0 {
			return number{i: i, neg: true, int: true}, true
		}
		return number{u: uint64(i), int: true}, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return number{u: v.Uint(), int: true}, true
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if f == math.Trunc(f) && !math.IsInf(f, 0) {
			switch {
			case f < 0 && f >= math.MinInt64:
				return number{i: int64(f), neg: true, int: true}, true
			case f >= 0 && f < math.MaxUint64:
				return number{u: uint64(f), int: true}, true
			}
		}
		return number{f: f}, true
	}
	return number{}, false
}

func hasExportedFields(t reflect.Type) bool {
	for i := range t.NumField() {
		if t.Field(i).IsExported() {
			return true
		}
	}
	return false
}
