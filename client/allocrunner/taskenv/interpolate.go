package taskenv

import "strings"

// Replace interpolates every ${NAME} of s whose NAME is a variable of the
// environment or a node reference; other references are left as written.
func (e *Env) Replace(s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		start := strings.Index(s, "${")
		if start < 0 {
			break
		}
		end := strings.IndexByte(s[start+2:], '}')
		if end < 0 {
			break
		}
		name := s[start+2 : start+2+end]
		b.WriteString(s[:start])
		if v, ok := e.lookup(strings.TrimSpace(name)); ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[start : start+3+end])
		}
		s = s[start+3+end:]
	}
	b.WriteString(s)
	return b.String()
}

func (e *Env) lookup(name string) (string, bool) {
	if v, ok := e.vars[name]; ok {
		return v, true
	}
	v, ok := e.node[name]
	return v, ok
}

// ReplaceSlice interpolates each element into a new slice.
func (e *Env) ReplaceSlice(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = e.Replace(s)
	}
	return out
}

// ReplaceConfig returns a deep copy of a driver config block with every
// string value interpolated, in nested maps and lists too. Keys and
// non-string values are kept; config is not modified.
func (e *Env) ReplaceConfig(config map[string]any) map[string]any {
	if config == nil {
		return nil
	}
	out := make(map[string]any, len(config))
	for k, v := range config {
		out[k] = e.replaceValue(v)
	}
	return out
}

func (e *Env) replaceValue(v any) any {
	switch t := v.(type) {
	case string:
		return e.Replace(t)
	case []string:
		return e.ReplaceSlice(t)
	case map[string]any:
		return e.ReplaceConfig(t)
	case map[string]string:
		out := make(map[string]string, len(t))
		for k, s := range t {
			out[k] = e.Replace(s)
		}
		return out
	case []map[string]any:
		out := make([]map[string]any, len(t))
		for i, m := range t {
			out[i] = e.ReplaceConfig(m)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = e.replaceValue(x)
		}
		return out
	}
	return v
}
