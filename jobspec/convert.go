package jobspec

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

var durationType = reflect.TypeOf(time.Duration(0))

// assign stores val into the settable fv, converting to fv's Go type. A null
// value leaves fv untouched (the field stays unset). Conversion problems
// become a diagnostic naming the attribute at rng.
func assign(val cty.Value, fv reflect.Value, name string, rng hcl.Range) hcl.Diagnostics {
	val, _ = val.UnmarkDeep()
	if !val.IsWhollyKnown() {
		return hcl.Diagnostics{errDiag(&rng, fmt.Sprintf("Invalid value for %q", name),
			"The value is not known while parsing the jobspec.")}
	}
	if err := setValue(val, fv); err != nil {
		return hcl.Diagnostics{errDiag(&rng, fmt.Sprintf("Invalid value for %q", name), err.Error())}
	}
	return nil
}

// setValue converts val into fv. Supported Go types: strings, bools, signed
// and unsigned integers (range checked), floats, time.Duration (a duration
// string such as "10s" or a number of nanoseconds), pointers to those,
// slices, string-keyed maps, and interface{} (plain Go values, see ctyToGo).
func setValue(val cty.Value, fv reflect.Value) error {
	if val.IsNull() {
		return nil
	}
	if fv.Type() == durationType {
		d, err := toDuration(val)
		fv.SetInt(int64(d))
		return err
	}
	switch fv.Kind() {
	case reflect.Pointer:
		elem := reflect.New(fv.Type().Elem())
		if err := setValue(val, elem.Elem()); err != nil {
			return err
		}
		fv.Set(elem)
	case reflect.String:
		s, err := toString(val)
		fv.SetString(s)
		return err
	case reflect.Bool:
		b, err := convert.Convert(val, cty.Bool)
		if err != nil {
			return err
		}
		fv.SetBool(b.True())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return setInt(val, fv)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return setUint(val, fv)
	case reflect.Float32, reflect.Float64:
		n, err := convert.Convert(val, cty.Number)
		if err != nil {
			return err
		}
		f, _ := n.AsBigFloat().Float64()
		fv.SetFloat(f)
	case reflect.Slice:
		return setSlice(val, fv)
	case reflect.Map:
		return setMap(val, fv)
	case reflect.Interface:
		if g := ctyToGo(val); g != nil {
			fv.Set(reflect.ValueOf(g))
		}
	default:
		return fmt.Errorf("unsupported field type %s", fv.Type())
	}
	return nil
}

func toString(val cty.Value) (string, error) {
	s, err := convert.Convert(val, cty.String)
	if err != nil {
		return "", err
	}
	return s.AsString(), nil
}

// toInt64 converts val to a whole number that fits in an int64.
func toInt64(val cty.Value) (int64, error) {
	n, err := convert.Convert(val, cty.Number)
	if err != nil {
		return 0, err
	}
	bf := n.AsBigFloat()
	if !bf.IsInt() {
		return 0, fmt.Errorf("a whole number is required, got %s", bf.Text('g', -1))
	}
	i, acc := bf.Int64()
	if acc != big.Exact {
		return 0, fmt.Errorf("number %s is out of range", bf.Text('g', -1))
	}
	return i, nil
}

func setInt(val cty.Value, fv reflect.Value) error {
	i, err := toInt64(val)
	if err != nil {
		return err
	}
	if fv.OverflowInt(i) {
		return fmt.Errorf("number %d is out of range for %s", i, fv.Type())
	}
	fv.SetInt(i)
	return nil
}

func setUint(val cty.Value, fv reflect.Value) error {
	i, err := toInt64(val)
	if err != nil {
		return err
	}
	if i < 0 || fv.OverflowUint(uint64(i)) {
		return fmt.Errorf("number %d is out of range for %s", i, fv.Type())
	}
	fv.SetUint(uint64(i))
	return nil
}

// toDuration accepts a Go duration string ("10s", "1h30m") or a number of
// nanoseconds.
func toDuration(val cty.Value) (time.Duration, error) {
	if val.Type() == cty.Number {
		i, err := toInt64(val)
		return time.Duration(i), err
	}
	s, err := toString(val)
	if err != nil {
		return 0, errors.New("a duration string such as \"10s\" or a number of nanoseconds is required")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q; use a duration string such as \"10s\" or \"5m\"", s)
	}
	return d, nil
}

func setSlice(val cty.Value, fv reflect.Value) error {
	ty := val.Type()
	if !ty.IsListType() && !ty.IsTupleType() && !ty.IsSetType() {
		return fmt.Errorf("a list is required, got %s", ty.FriendlyName())
	}
	out := reflect.MakeSlice(fv.Type(), 0, val.LengthInt())
	for it := val.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		item := reflect.New(fv.Type().Elem()).Elem()
		if err := setValue(ev, item); err != nil {
			return err
		}
		out = reflect.Append(out, item)
	}
	fv.Set(out)
	return nil
}

func setMap(val cty.Value, fv reflect.Value) error {
	ty := val.Type()
	if fv.Type().Key().Kind() != reflect.String || (!ty.IsMapType() && !ty.IsObjectType()) {
		return fmt.Errorf("a map is required, got %s", ty.FriendlyName())
	}
	out := reflect.MakeMapWithSize(fv.Type(), val.LengthInt())
	for it := val.ElementIterator(); it.Next(); {
		k, ev := it.Element()
		item := reflect.New(fv.Type().Elem()).Elem()
		if err := setValue(ev, item); err != nil {
			return fmt.Errorf("key %q: %w", k.AsString(), err)
		}
		out.SetMapIndex(reflect.ValueOf(k.AsString()).Convert(fv.Type().Key()), item)
	}
	fv.Set(out)
	return nil
}

// ctyToGo converts a value to plain Go data for opaque maps (driver config):
// string, bool, int (whole numbers that fit) or float64, []any for
// lists/sets/tuples, map[string]any for maps/objects, nil for null/unknown.
func ctyToGo(val cty.Value) any {
	val, _ = val.UnmarkDeep()
	if val.IsNull() || !val.IsKnown() {
		return nil
	}
	ty := val.Type()
	switch {
	case ty == cty.String:
		return val.AsString()
	case ty == cty.Bool:
		return val.True()
	case ty == cty.Number:
		return numberToGo(val.AsBigFloat())
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		out := make([]any, 0, val.LengthInt())
		for it := val.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			out = append(out, ctyToGo(ev))
		}
		return out
	case ty.IsMapType() || ty.IsObjectType():
		out := make(map[string]any, val.LengthInt())
		for it := val.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			out[k.AsString()] = ctyToGo(ev)
		}
		return out
	}
	return nil
}

// numberToGo returns an int for whole numbers within int range, else float64.
func numberToGo(bf *big.Float) any {
	if bf.IsInt() {
		if i, acc := bf.Int64(); acc == big.Exact && i >= math.MinInt && i <= math.MaxInt {
			return int(i)
		}
	}
	f, _ := bf.Float64()
	return f
}
