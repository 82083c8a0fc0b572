package imageresolve

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	// The zone database is embedded so that windows in any IANA zone parse
	// the same on every server, whatever the host has installed.
	_ "time/tzdata"
)

// Window is one auto_update_window: on the listed days, from Start to End
// (minutes after midnight) in Zone. End <= Start means the window runs
// past midnight into the next day (it opens on the listed day).
//
// Syntax of one window: `[DAYS] HH:MM-HH:MM [ZONE]`
//
//   - DAYS: comma-separated day names (Mon Tue Wed Thu Fri Sat Sun, any
//     case, or full names) and ranges ("Mon-Fri", "Fri-Mon" wraps), or
//     "*"; omitted means every day.
//   - HH:MM-HH:MM: the opening and closing time, 24-hour clock; the
//     window is open from the first minute up to (not including) the
//     second. "24:00" closes at midnight.
//   - ZONE: an IANA time zone ("Europe/Berlin", "UTC"); omitted means
//     UTC.
//
// Several windows are separated by ";" in one string, or given as a list;
// the update may roll while any of them is open.
type Window struct {
	Days       [7]bool // indexed by time.Weekday
	Start, End int     // minutes after midnight, 0..1440
	Zone       *time.Location
	Text       string
}

// Windows is a set of windows; empty means always open.
type Windows []Window

var dayNames = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
}

// ParseWindows parses the value of auto_update_window: a string of one or
// more windows separated by ";", or a list of such strings. Errors name
// the key and the window.
func ParseWindows(v any) (Windows, error) {
	var parts []string
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		parts = strings.Split(t, ";")
	case []string:
		for _, s := range t {
			parts = append(parts, strings.Split(s, ";")...)
		}
	case []any:
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("auto_update_window must be a string or a list of strings, got a %T in the list", e)
			}
			parts = append(parts, strings.Split(s, ";")...)
		}
	default:
		return nil, fmt.Errorf("auto_update_window must be a string or a list of strings, got %T", v)
	}
	var out Windows
	var errs []error
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		w, err := parseWindow(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("auto_update_window %q: %w (syntax: \"[DAYS] HH:MM-HH:MM [ZONE]\", e.g. \"Sat 02:00-04:00 Europe/Berlin\")", p, err))
			continue
		}
		out = append(out, w)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(out) == 0 {
		return nil, errors.New(`auto_update_window has no window (syntax: "[DAYS] HH:MM-HH:MM [ZONE]", e.g. "Sat 02:00-04:00 Europe/Berlin")`)
	}
	return out, nil
}

func parseWindow(s string) (Window, error) {
	w := Window{Zone: time.UTC, Text: s}
	f := strings.Fields(s)
	ti := -1
	for i, x := range f {
		if strings.Contains(x, ":") && strings.Contains(x, "-") && x[0] >= '0' && x[0] <= '9' {
			ti = i
			break
		}
	}
	if ti < 0 {
		return w, errors.New("no time range HH:MM-HH:MM")
	}
	if ti > 1 {
		return w, fmt.Errorf("days must be one word without spaces (such as \"Mon-Fri\" or \"Sat,Sun\"), got %q", strings.Join(f[:ti], " "))
	}
	if len(f) > ti+2 {
		return w, fmt.Errorf("unexpected %q after the time zone", strings.Join(f[ti+2:], " "))
	}
	if ti == 1 {
		days, err := parseDays(f[0])
		if err != nil {
			return w, err
		}
		w.Days = days
	} else {
		for i := range w.Days {
			w.Days[i] = true
		}
	}
	a, b, ok := strings.Cut(f[ti], "-")
	if !ok {
		return w, fmt.Errorf("time range %q must be HH:MM-HH:MM", f[ti])
	}
	var err error
	if w.Start, err = parseClock(a); err != nil {
		return w, err
	}
	if w.End, err = parseClock(b); err != nil {
		return w, err
	}
	if w.Start == 1440 {
		return w, errors.New("a window cannot open at 24:00")
	}
	if w.Start == w.End {
		return w, fmt.Errorf("time range %q is empty", f[ti])
	}
	if len(f) == ti+2 {
		loc, err := loadZone(f[ti+1])
		if err != nil || f[ti+1] == "Local" || f[ti+1] == "" {
			return w, fmt.Errorf("unknown time zone %q (an IANA name such as \"Europe/Berlin\" or \"UTC\")", f[ti+1])
		}
		w.Zone = loc
	}
	return w, nil
}

// zones caches loaded zones: settings are parsed on every watcher pass.
var zones sync.Map // name -> *time.Location

func loadZone(name string) (*time.Location, error) {
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location), nil
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, l)
	return l, nil
}

func parseDays(s string) ([7]bool, error) {
	var d [7]bool
	if s == "*" {
		for i := range d {
			d[i] = true
		}
		return d, nil
	}
	for _, part := range strings.Split(s, ",") {
		a, b, isRange := strings.Cut(part, "-")
		from, ok := dayNames[strings.ToLower(a)]
		if !ok {
			return d, fmt.Errorf("unknown day %q (Mon Tue Wed Thu Fri Sat Sun, a range such as Mon-Fri, or *)", a)
		}
		to := from
		if isRange {
			if to, ok = dayNames[strings.ToLower(b)]; !ok {
				return d, fmt.Errorf("unknown day %q (Mon Tue Wed Thu Fri Sat Sun, a range such as Mon-Fri, or *)", b)
			}
		}
		for x := from; ; x = (x + 1) % 7 {
			d[x] = true
			if x == to {
				break
			}
		}
	}
	return d, nil
}

func parseClock(s string) (int, error) {
	h, m, ok := strings.Cut(s, ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || len(m) != 2 || len(h) < 1 || len(h) > 2 || hh < 0 || mm < 0 || mm > 59 || hh > 24 || (hh == 24 && mm != 0) {
		return 0, fmt.Errorf("time %q must be HH:MM (00:00 to 24:00)", s)
	}
	return hh*60 + mm, nil
}

// span returns the window's opening and closing instants on the day of
// date (in the window's zone), and whether it opens that day.
func (w Window) span(y int, mo time.Month, d int) (time.Time, time.Time, bool) {
	day := time.Date(y, mo, d, 0, 0, 0, 0, w.Zone)
	if !w.Days[day.Weekday()] {
		return time.Time{}, time.Time{}, false
	}
	open := time.Date(y, mo, d, w.Start/60, w.Start%60, 0, 0, w.Zone)
	ed := d
	if w.End <= w.Start {
		ed++
	}
	closeAt := time.Date(y, mo, ed, w.End/60, w.End%60, 0, 0, w.Zone)
	return open, closeAt, closeAt.After(open)
}

// Next returns when the window is next open at or after now (in now's
// location): now itself when it is open now. A window that falls wholly
// into a daylight-saving gap of its zone does not open that day; it opens
// the next week.
func (w Window) Next(now time.Time) time.Time {
	local := now.In(w.Zone)
	for i := -1; i <= 15; i++ {
		open, closeAt, ok := w.span(local.Year(), local.Month(), local.Day()+i)
		if !ok || !closeAt.After(now) {
			continue
		}
		if !open.After(now) {
			return now
		}
		return open.In(now.Location())
	}
	return time.Time{} // unreachable: some day of every two weeks opens
}

// Next returns when any window is next open at or after now (now when one
// is open, or when there are none).
func (ws Windows) Next(now time.Time) time.Time {
	if len(ws) == 0 {
		return now
	}
	var best time.Time
	for _, w := range ws {
		if n := w.Next(now); best.IsZero() || n.Before(best) {
			best = n
		}
	}
	return best
}

// Open reports whether a window is open at now (true when there are none).
func (ws Windows) Open(now time.Time) bool { return !ws.Next(now).After(now) }

// String joins the windows as written.
func (ws Windows) String() string {
	var s []string
	for _, w := range ws {
		s = append(s, w.Text)
	}
	return strings.Join(s, "; ")
}
