package scheduler

import (
	"strconv"
	"strings"
)

// version is a parsed dotted numeric version with an optional pre-release;
// build metadata is dropped (it never affects order).
type version struct {
	segments []int64 // as written, at least one
	pre      string  // pre-release identifiers ("beta.1"), or ""
}

// parseVersion parses s. Loose (the "version" operand, go-version style):
// an optional "v", one or more numeric segments, an optional pre-release
// introduced by "-" or directly by a letter ("1.2.3beta1"), optional
// "+metadata". Strict (the "semver" operand): exactly MAJOR.MINOR.PATCH, an
// optional "-pre-release" and "+build", no "v".
func parseVersion(s string, strict bool) (version, bool) {
	if !strict {
		s = strings.TrimPrefix(s, "v")
	}
	s, meta, hasMeta := strings.Cut(s, "+")
	if hasMeta && !validIdentifiers(meta) {
		return version{}, false
	}
	end := 0
	for end < len(s) && (s[end] == '.' || (s[end] >= '0' && s[end] <= '9')) {
		end++
	}
	var v version
	for _, part := range strings.Split(s[:end], ".") {
		n, err := strconv.ParseInt(part, 10, 64)
		if err != nil {
			return version{}, false
		}
		v.segments = append(v.segments, n)
	}
	rest := s[end:]
	switch {
	case rest == "":
	case strings.HasPrefix(rest, "-"):
		v.pre = rest[1:]
	case !strict && isLetter(rest[0]):
		v.pre = rest
	default:
		return version{}, false
	}
	if rest != "" && !validIdentifiers(v.pre) {
		return version{}, false
	}
	if strict && len(v.segments) != 3 {
		return version{}, false
	}
	return v, true
}

func isLetter(b byte) bool { return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') }

// validIdentifiers reports whether s is dot-separated non-empty identifiers
// of [0-9A-Za-z-~].
func validIdentifiers(s string) bool {
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return false
		}
		for i := 0; i < len(id); i++ {
			c := id[i]
			if !isLetter(c) && (c < '0' || c > '9') && c != '-' && c != '~' {
				return false
			}
		}
	}
	return true
}

// segment returns segment i, 0 past the written ones ("1.2" is "1.2.0").
func (v version) segment(i int) int64 {
	if i < len(v.segments) {
		return v.segments[i]
	}
	return 0
}

// compare returns -1, 0 or 1 as v is older than, equal to or newer than o,
// by semver 2.0 precedence.
func (v version) compare(o version) int {
	if c := v.compareBase(o); c != 0 {
		return c
	}
	switch {
	case v.pre == o.pre:
		return 0
	case v.pre == "":
		return 1
	case o.pre == "":
		return -1
	}
	return comparePreRelease(v.pre, o.pre)
}

// compareBase compares the numeric segments only.
func (v version) compareBase(o version) int {
	n := max(len(v.segments), len(o.segments), 3)
	for i := 0; i < n; i++ {
		if c := compareOrdered(v.segment(i), o.segment(i)); c != 0 {
			return c
		}
	}
	return 0
}

// comparePreRelease orders dot-separated pre-release identifiers: numeric
// ones numerically and below alphanumeric ones, the rest lexically, a
// shorter list first when it is a prefix of the other.
func comparePreRelease(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		an, aerr := strconv.ParseInt(as[i], 10, 64)
		bn, berr := strconv.ParseInt(bs[i], 10, 64)
		var c int
		switch {
		case aerr == nil && berr == nil:
			c = compareOrdered(an, bn)
		case aerr == nil:
			c = -1
		case berr == nil:
			c = 1
		default:
			c = strings.Compare(as[i], bs[i])
		}
		if c != 0 {
			return c
		}
	}
	return compareOrdered(int64(len(as)), int64(len(bs)))
}

// versionTerm is one comparison of a constraint, such as ">= 1.2".
type versionTerm struct {
	op string // "=", "!=", ">", ">=", "<", "<=", "~>"
	v  version
}

// versionConstraint is a parsed comma-separated list of terms, all of which
// must hold. An invalid constraint matches nothing.
type versionConstraint struct {
	terms  []versionTerm
	strict bool
	valid  bool
}

// versionOps lists term operators, longest first so that ">=" wins over ">".
var versionOps = []string{"~>", ">=", "<=", "!=", ">", "<", "="}

// parseVersionConstraint parses expr such as ">= 1.2, < 2" (a bare version
// means "="). strict selects semver parsing and disallows "~>".
func parseVersionConstraint(expr string, strict bool) versionConstraint {
	vc := versionConstraint{strict: strict}
	for _, raw := range strings.Split(expr, ",") {
		term := strings.TrimSpace(raw)
		op := "="
		for _, o := range versionOps {
			if rest, ok := strings.CutPrefix(term, o); ok {
				op, term = o, strings.TrimSpace(rest)
				break
			}
		}
		v, ok := parseVersion(term, strict)
		if !ok || (strict && op == "~>") {
			return vc
		}
		vc.terms = append(vc.terms, versionTerm{op: op, v: v})
	}
	vc.valid = len(vc.terms) > 0
	return vc
}

// check reports whether s parses as a version and meets every term.
//
// Assumptions: in loose mode ("version", go-version semantics) a pre-release
// version only meets a term that names a pre-release of the same base
// version, so ">= 1.0" does not match "1.3.0-beta1"; strict mode ("semver")
// orders pre-releases by semver precedence and has no such rule.
func (vc versionConstraint) check(s string) bool {
	if !vc.valid {
		return false
	}
	v, ok := parseVersion(s, vc.strict)
	if !ok {
		return false
	}
	for _, t := range vc.terms {
		if !vc.strict && !preReleaseAllowed(v, t.v) {
			return false
		}
		if !t.holds(v) {
			return false
		}
	}
	return true
}

func preReleaseAllowed(v, c version) bool {
	switch {
	case v.pre != "" && c.pre != "":
		return v.compareBase(c) == 0
	case v.pre != "":
		return false
	}
	return true
}

// holds reports whether v meets the term.
func (t versionTerm) holds(v version) bool {
	c := v.compare(t.v)
	switch t.op {
	case "=":
		return c == 0
	case "!=":
		return c != 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	}
	// "~>": at least t.v, and equal in every written segment but the last
	// ("~> 1.2" is ">= 1.2, < 2"; "~> 1.2.3" is ">= 1.2.3, < 1.3").
	if c < 0 {
		return false
	}
	for i := 0; i < len(t.v.segments)-1; i++ {
		if v.segment(i) != t.v.segments[i] {
			return false
		}
	}
	return true
}
