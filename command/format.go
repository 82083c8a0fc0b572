package command

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// shortIDLength is how many characters of an ID are shown without -verbose.
const shortIDLength = 8

// now is the clock used for relative times; tests may replace it.
var now = time.Now

// limit returns the first n characters of s (all of s if shorter).
func limit(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// shortID returns id shortened to 8 characters unless verbose is set.
func shortID(id string, verbose bool) string {
	if verbose {
		return id
	}
	return limit(id, shortIDLength)
}

// formatKV aligns "Key|Value" rows as "Key   = Value".
func formatKV(rows []string) string {
	width := 0
	for _, r := range rows {
		k, _, _ := strings.Cut(r, "|")
		width = max(width, len(k))
	}
	var b strings.Builder
	for i, r := range rows {
		k, v, _ := strings.Cut(r, "|")
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%-*s = %s", width, k, v)
	}
	return b.String()
}

// formatList aligns "a|b|c" rows into columns separated by two spaces.
func formatList(rows []string) string {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.ReplaceAll(r, "|", "\t"))
	}
	_ = tw.Flush()
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// indent prefixes every non-empty line of s with prefix.
func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}

// formatTime renders t in local time as RFC 3339; the zero time is "N/A".
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "N/A"
	}
	return t.Local().Format(time.RFC3339)
}

// formatUnixNano renders a Unix-nanosecond timestamp like formatTime.
func formatUnixNano(n int64) string {
	if n == 0 {
		return "N/A"
	}
	return formatTime(time.Unix(0, n))
}

// prettyTimeDiff renders the time between then and ref as "1h5m ago",
// keeping the two most significant units.
func prettyTimeDiff(then, ref time.Time) string {
	if then.IsZero() {
		return "N/A"
	}
	d := ref.Sub(then).Round(time.Second)
	suffix := " ago"
	if d < 0 {
		d, suffix = -d, " from now"
	}
	units := []struct {
		name string
		size time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}}
	var parts []string
	for _, u := range units {
		n := d / u.size
		d -= n * u.size
		if n == 0 && len(parts) > 0 {
			break
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d%s", n, u.name))
		}
		if len(parts) == 2 {
			break
		}
	}
	if len(parts) == 0 {
		return "0s" + suffix
	}
	return strings.Join(parts, "") + suffix
}

// formatAge renders a Unix-nanosecond time for a table: relative unless
// verbose, when the full timestamp is shown.
func formatAge(n int64, verbose bool) string {
	if n == 0 {
		return "N/A"
	}
	if verbose {
		return formatUnixNano(n)
	}
	return prettyTimeDiff(time.Unix(0, n), now())
}

// prettyJSON encodes v as JSON indented with four spaces.
func prettyJSON(v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// valueOr returns s, or def when s is empty.
func valueOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// sortedKeys returns the keys of m in lexical order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// plural returns "1 allocation" / "2 allocations".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// sanitizeUUIDPrefix trims a prefix to an even number of non-hyphen
// characters, as the server's prefix index needs whole bytes.
func sanitizeUUIDPrefix(prefix string) string {
	n := len(prefix) - strings.Count(prefix, "-")
	if n%2 == 0 {
		return prefix
	}
	return prefix[:len(prefix)-1]
}
