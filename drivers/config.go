package drivers

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// FieldError is a validation error naming a driver config field and the rule
// it breaks; Error renders "<field> <rule>", e.g. "command is required".
type FieldError struct {
	Field string
	Rule  string
	// Key marks a problem with the key itself (CheckFields: not an option
	// of the driver), not with its value: it stands whatever the value
	// interpolates to.
	Key bool
}

func (e *FieldError) Error() string { return e.Field + " " + e.Rule }

// CheckFields returns a FieldError for each key of config not in allowed,
// joined with errors.Join, in key order.
func CheckFields(config map[string]any, allowed ...string) error {
	ok := make(map[string]bool, len(allowed))
	for _, a := range allowed {
		ok[a] = true
	}
	var bad []string
	for k := range config {
		if !ok[k] {
			bad = append(bad, k)
		}
	}
	sort.Strings(bad)
	errs := make([]error, 0, len(bad))
	for _, k := range bad {
		errs = append(errs, &FieldError{Field: k, Rule: "is not a known option (known: " + strings.Join(allowed, ", ") + ")", Key: true})
	}
	return errors.Join(errs...)
}

// ConfigString returns config[key] as a string; ok is false when absent or
// null.
func ConfigString(config map[string]any, key string) (s string, ok bool, err error) {
	v, present := config[key]
	if !present || v == nil {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", false, &FieldError{Field: key, Rule: fmt.Sprintf("must be a string, got %T", v)}
	}
	return s, true, nil
}

// ConfigBool returns config[key] as a bool; the strings "true", "false",
// "1" and "0" are accepted too (Nomad's old client options were strings).
func ConfigBool(config map[string]any, key string) (b bool, ok bool, err error) {
	v, present := config[key]
	if !present || v == nil {
		return false, false, nil
	}
	switch t := v.(type) {
	case bool:
		return t, true, nil
	case string:
		switch strings.ToLower(t) {
		case "true", "1":
			return true, true, nil
		case "false", "0":
			return false, true, nil
		}
	}
	return false, false, &FieldError{Field: key, Rule: fmt.Sprintf("must be a bool, got %T %v", v, v)}
}

// ConfigInt returns config[key] as an int; float64 values must be whole.
func ConfigInt(config map[string]any, key string) (n int, ok bool, err error) {
	v, present := config[key]
	if !present || v == nil {
		return 0, false, nil
	}
	n, isInt := toInt(v)
	if !isInt {
		return 0, false, &FieldError{Field: key, Rule: fmt.Sprintf("must be an integer, got %T %v", v, v)}
	}
	return n, true, nil
}

// ConfigDuration returns config[key] as a duration: a Go duration string
// ("150ms", "10s") or a number of nanoseconds. Negative values are errors.
func ConfigDuration(config map[string]any, key string) (d time.Duration, ok bool, err error) {
	v, present := config[key]
	if !present || v == nil {
		return 0, false, nil
	}
	if s, isStr := v.(string); isStr {
		d, err = time.ParseDuration(s)
		if err != nil {
			return 0, false, &FieldError{Field: key, Rule: fmt.Sprintf("must be a duration such as \"10s\": %v", err)}
		}
	} else if n, isInt := toInt(v); isInt {
		d = time.Duration(n)
	} else {
		return 0, false, &FieldError{Field: key, Rule: fmt.Sprintf("must be a duration string such as \"10s\" or a number of nanoseconds, got %T", v)}
	}
	if d < 0 {
		return 0, false, &FieldError{Field: key, Rule: "must not be negative"}
	}
	return d, true, nil
}

// ConfigStringSlice returns config[key] as a []string; []any of strings is
// accepted.
func ConfigStringSlice(config map[string]any, key string) (ss []string, ok bool, err error) {
	v, present := config[key]
	if !present || v == nil {
		return nil, false, nil
	}
	switch t := v.(type) {
	case []string:
		return append([]string(nil), t...), true, nil
	case []any:
		out := make([]string, len(t))
		for i, e := range t {
			s, isStr := e.(string)
			if !isStr {
				return nil, false, &FieldError{Field: fmt.Sprintf("%s[%d]", key, i), Rule: fmt.Sprintf("must be a string, got %T", e)}
			}
			out[i] = s
		}
		return out, true, nil
	}
	return nil, false, &FieldError{Field: key, Rule: fmt.Sprintf("must be a list of strings, got %T", v)}
}

func toInt(v any) (int, bool) {
	switch t := v.(type) {
	case int:
		return t, true
	case int8:
		return int(t), true
	case int16:
		return int(t), true
	case int32:
		return int(t), true
	case int64:
		return int(t), true
	case uint:
		return int(t), true
	case uint8:
		return int(t), true
	case uint16:
		return int(t), true
	case uint32:
		return int(t), true
	case uint64:
		if t > math.MaxInt64 {
			return 0, false
		}
		return int(t), true
	case float32:
		return floatToInt(float64(t))
	case float64:
		return floatToInt(t)
	case json.Number:
		if n, err := t.Int64(); err == nil {
			return int(n), true
		}
		if f, err := t.Float64(); err == nil {
			return floatToInt(f)
		}
	}
	return 0, false
}

func floatToInt(f float64) (int, bool) {
	if f != math.Trunc(f) || f > math.MaxInt64 || f < math.MinInt64 {
		return 0, false
	}
	return int(f), true
}
