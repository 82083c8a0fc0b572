package fill

import (
	"fmt"
	"reflect"
	"time"
)

// MaxDepth bounds the fill of recursive types (structs.ObjectDiff.Objects);
// the deepest non-recursive path (Allocation.Job...Checks[].Header) needs 16.
const MaxDepth = 20

// Options change what is filled.
type Options struct {
	// Skip leaves values of the types it reports zero (types whose
	// encoding is another package's, set by hand).
	Skip func(reflect.Type) bool
	// Interface is the value an interface field gets from the running
	// count n; by default map[string]any{"nested": []any{"v<n>", n}}.
	Interface func(n int) any
}

// New returns a *T filled with opts (Value).
func New[T any](opts Options) *T {
	var x T
	n := 0
	Value(reflect.ValueOf(&x).Elem(), &n, opts)
	return &x
}

// Value sets every exported field reachable from v to a distinct non-zero
// value: one element per list and map, fresh pointers, numbers in 1..100,
// strings "v<n>", times at whole seconds in UTC. n counts the values set.
func Value(v reflect.Value, n *int, opts Options) { fillDepth(v, n, 0, opts) }

func fillDepth(v reflect.Value, n *int, depth int, opts Options) {
	if depth > MaxDepth || (opts.Skip != nil && opts.Skip(v.Type())) {
		return
	}
	fill := func(v reflect.Value, n *int) { fillDepth(v, n, depth+1, opts) }
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), n)
		v.Set(p)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(int64(1_700_000_000+*n), 0).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), n)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fill(k, n)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, n)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Interface:
		if opts.Interface != nil {
			v.Set(reflect.ValueOf(opts.Interface(*n)))
		} else {
			v.Set(reflect.ValueOf(map[string]any{"nested": []any{fmt.Sprintf("v%d", *n), *n}}))
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("v%d", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n%100 + 1))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n%100 + 1))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	}
}
