package apiconv

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// copyByName copies src into dst, which must be settable. Struct fields are
// matched by name; fields missing on either side are skipped. Pointers are
// followed on both sides: a nil source pointer gives dst's zero value, and a
// pointer destination gets a fresh allocation whenever the source has a value
// (so a structs value field always becomes a non-nil api pointer). Slices
// and maps are copied element by element; interface values (driver configs)
// are deep-copied keeping their dynamic types; numbers convert between sizes
// and signedness. A shape mismatch between the two types is a programming
// error and panics with the field path; the tests walk every converted type.
// An embedded struct matches a field (embedded or not) of its type's name.
func copyByName(dst, src reflect.Value, path *fieldPath) {
	if dst.Kind() == reflect.Interface {
		if !src.IsValid() || isNil(src) {
			dst.SetZero()
			return
		}
		dst.Set(deepCopy(src))
		return
	}
	for src.Kind() == reflect.Pointer || src.Kind() == reflect.Interface {
		if src.IsNil() {
			dst.SetZero()
			return
		}
		src = src.Elem()
	}
	if dst.Kind() == reflect.Pointer {
		p := reflect.New(dst.Type().Elem())
		copyByName(p.Elem(), src, path)
		dst.Set(p)
		return
	}
	switch dst.Kind() {
	case reflect.Struct:
		copyStruct(dst, src, path)
	case reflect.Slice:
		mustKind(src, reflect.Slice, dst, path)
		if src.IsNil() {
			dst.SetZero()
			return
		}
		s := reflect.MakeSlice(dst.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			copyByName(s.Index(i), src.Index(i), &fieldPath{parent: path, index: i, isIndex: true})
		}
		dst.Set(s)
	case reflect.Map:
		mustKind(src, reflect.Map, dst, path)
		if src.IsNil() {
			dst.SetZero()
			return
		}
		m := reflect.MakeMapWithSize(dst.Type(), src.Len())
		iter := src.MapRange()
		for iter.Next() {
			k := reflect.New(dst.Type().Key()).Elem()
			copyByName(k, iter.Key(), path)
			v := reflect.New(dst.Type().Elem()).Elem()
			copyByName(v, iter.Value(), &fieldPath{parent: path, key: iter.Key()})
			m.SetMapIndex(k, v)
		}
		dst.Set(m)
	default:
		if kindClass(src.Kind()) != kindClass(dst.Kind()) || kindClass(dst.Kind()) == "" {
			panic(fmt.Sprintf("convert: %s: cannot copy %s into %s", path, src.Type(), dst.Type()))
		}
		dst.Set(src.Convert(dst.Type()))
	}
}

func copyStruct(dst, src reflect.Value, path *fieldPath) {
	plan := structPlanFor(dst.Type(), src.Type())
	if plan.opaque {
		dst.Set(src) // time.Time and other opaque values
		return
	}
	mustKind(src, reflect.Struct, dst, path)
	for _, f := range plan.fields {
		copyByName(dst.Field(f.dst), src.Field(f.src), &fieldPath{parent: path, name: f.name})
	}
}

// structPlan is how copyStruct copies one struct type into another: the
// pairs of fields matched by name, or the whole value when it is opaque.
// Plans are computed once per pair of types: the allocations a client's
// long poll returns are converted on every answer.
type structPlan struct {
	opaque bool
	fields []fieldPair
}

type fieldPair struct {
	dst, src int
	name     string
}

var structPlans sync.Map // [2]reflect.Type{dst, src} → *structPlan

func structPlanFor(dt, st reflect.Type) *structPlan {
	key := [2]reflect.Type{dt, st}
	if p, ok := structPlans.Load(key); ok {
		return p.(*structPlan)
	}
	plan := &structPlan{opaque: dt == st && !hasExportedFields(dt)}
	if !plan.opaque && st.Kind() == reflect.Struct {
		for i := range dt.NumField() {
			f := dt.Field(i)
			if !f.IsExported() {
				continue
			}
			sf, ok := st.FieldByName(f.Name)
			if !ok || !sf.IsExported() || len(sf.Index) != 1 {
				continue
			}
			plan.fields = append(plan.fields, fieldPair{dst: i, src: sf.Index[0], name: f.Name})
		}
	}
	structPlans.Store(key, plan)
	return plan
}

// fieldPath names the value being copied, for the panic of a shape
// mismatch; it is only rendered then.
type fieldPath struct {
	parent  *fieldPath
	name    string        // a field name, or the root's type name
	index   int           // a slice index, when isIndex
	isIndex bool          //
	key     reflect.Value // a map key, when valid
}

func (p *fieldPath) String() string {
	var parts []string
	for ; p != nil; p = p.parent {
		switch {
		case p.isIndex:
			parts = append(parts, fmt.Sprintf("[%d]", p.index))
		case p.key.IsValid():
			parts = append(parts, fmt.Sprintf("[%v]", p.key))
		case p.parent == nil:
			parts = append(parts, p.name)
		default:
			parts = append(parts, "."+p.name)
		}
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		b.WriteString(parts[i])
	}
	return b.String()
}

func mustKind(src reflect.Value, k reflect.Kind, dst reflect.Value, path *fieldPath) {
	if src.Kind() != k {
		panic(fmt.Sprintf("convert: %s: cannot copy %s into %s", path, src.Type(), dst.Type()))
	}
}

// kindClass groups the kinds that convert into each other without loss of
// meaning; "" for kinds copyByName does not convert.
func kindClass(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "float"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	}
	return ""
}

// deepCopy returns a copy of v that shares no maps, slices or pointers with
// it and has the same dynamic types throughout.
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Interface:
		out := reflect.New(v.Type()).Elem()
		if !v.IsNil() {
			out.Set(deepCopy(v.Elem()))
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(deepCopy(v.Elem()))
		return p
	case reflect.Map:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			m.SetMapIndex(iter.Key(), deepCopy(iter.Value()))
		}
		return m
	case reflect.Slice:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			s.Index(i).Set(deepCopy(v.Index(i)))
		}
		return s
	}
	return v
}

func isNil(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer, reflect.Map, reflect.Slice:
		return v.IsNil()
	}
	return false
}

func hasExportedFields(t reflect.Type) bool {
	for i := range t.NumField() {
		if t.Field(i).IsExported() {
			return true
		}
	}
	return false
}

// convertInto copies src (a pointer to a struct, possibly nil) into a new
// value of type *T by field name.
func convertInto[T any](src any) *T {
	sv := reflect.ValueOf(src)
	if !sv.IsValid() || sv.IsNil() {
		return nil
	}
	out := new(T)
	copyByName(reflect.ValueOf(out).Elem(), sv, &fieldPath{name: reflect.TypeFor[T]().Name()})
	return out
}
