// Command report turns the `go test -json` output of the nomad/api module's
// test suite, run against Drover, into CONFORMANCE.md, and checks it against
// the baseline of tests that must keep passing.
//
// Usage (scripts/conformance/run.sh calls it):
//
//	go run ./scripts/conformance/report -in bin/conformance.json -src <api copy> \
//	    -baseline scripts/conformance/baseline.txt -out CONFORMANCE.md [-check] [-write-baseline]
//
// With -check it exits 1 when a baselined test did not pass. With
// -write-baseline it replaces the baseline by the tests that passed.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

func main() {
	in := flag.String("in", "", "go test -json output")
	src := flag.String("src", "", "directory of the api module's test sources (maps tests to files)")
	baseline := flag.String("baseline", "", "file of test names that must pass, one a line")
	out := flag.String("out", "CONFORMANCE.md", "report to write")
	module := flag.String("module", "", "module@version under test, for the report header")
	seconds := flag.Int("seconds", 0, "wall time of the run, for the report header")
	check := flag.Bool("check", false, "exit 1 when a baselined test did not pass")
	writeBaseline := flag.Bool("write-baseline", false, "replace the baseline by the tests that passed")
	flag.Parse()

	if err := run(*in, *src, *baseline, *out, *module, *seconds, *check, *writeBaseline); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}

func run(in, src, baselinePath, out, module string, seconds int, check, writeBaseline bool) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := parseEvents(f)
	if err != nil {
		return err
	}
	files, serverBacked, err := indexSources(src)
	if err != nil {
		return err
	}
	base, err := readBaseline(baselinePath)
	if err != nil {
		return err
	}
	rep := summarize(res, files, serverBacked, base)
	md := render(rep, module, seconds)
	if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Printf("conformance: %d passed, %d failed, %d skipped of %d tests (%d of %d server-backed pass); wrote %s\n",
		rep.pass, rep.fail, rep.skip, len(rep.tests), rep.serverPass, rep.serverTotal, out)
	if writeBaseline {
		var names []string
		for _, t := range rep.tests {
			if t.outcome == outcomePass {
				names = append(names, t.name)
			}
		}
		body := "# Tests of the nomad/api suite that pass against Drover; CI fails if one stops passing.\n" +
			"# Regenerate with `make conformance-baseline` after a real run.\n" + strings.Join(names, "\n") + "\n"
		if err := os.WriteFile(baselinePath, []byte(body), 0o644); err != nil {
			return err
		}
		fmt.Printf("conformance: baseline now lists %d tests\n", len(names))
	}
	if len(rep.regressions) > 0 {
		fmt.Printf("conformance: %d baselined tests did not pass:\n", len(rep.regressions))
		for _, t := range rep.regressions {
			fmt.Printf("  %s (%s): %s\n", t.name, t.outcome, t.reason)
		}
		if check {
			return errors.New("baselined tests regressed")
		}
	}
	return nil
}

// readBaseline reads test names, one a line; '#' starts a comment.
func readBaseline(path string) (map[string]bool, error) {
	base := map[string]bool{}
	if path == "" {
		return base, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return base, nil
	}
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		base[line] = true
	}
	return base, nil
}

// event is one line of `go test -json`.
type event struct {
	Action string
	Test   string
	Output string
}

type outcome string

const (
	outcomePass outcome = "pass"
	outcomeFail outcome = "fail"
	outcomeSkip outcome = "skip"
	// outcomeNone: the test started but never finished (the run timed out
	// or the binary panicked); it counts as failed.
	outcomeNone outcome = "did not finish"
)

// testResult is one top-level test.
type testResult struct {
	name    string
	outcome outcome
	output  []string // the test's and its subtests' output lines, in order
	reason  string
}

// parseEvents collects top-level test outcomes and their output.
func parseEvents(r io.Reader) (map[string]*testResult, error) {
	res := map[string]*testResult{}
	var pkgOutput []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			continue
		}
		if ev.Test == "" {
			if ev.Action == "output" {
				pkgOutput = append(pkgOutput, ev.Output)
			}
			continue
		}
		top, _, isSub := strings.Cut(ev.Test, "/")
		t := res[top]
		if t == nil {
			t = &testResult{name: top, outcome: outcomeNone}
			res[top] = t
		}
		switch ev.Action {
		case "output":
			t.output = append(t.output, ev.Output)
		case "pass", "fail", "skip":
			if !isSub {
				t.outcome = outcome(ev.Action)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, t := range res {
		t.reason = reasonOf(t)
	}
	// A panic in the test binary is reported on the package: name it on
	// the tests that did not finish.
	if panicLine := firstMatching(pkgOutput, func(s string) bool { return strings.HasPrefix(s, "panic:") }); panicLine != "" {
		for _, t := range res {
			if t.outcome == outcomeNone && t.reason == "" {
				t.reason = panicLine
			}
		}
	}
	return res, nil
}

// reasonOf is the first failure (or skip) line of a test's output, with
// the line that explains it when the assertion library splits them.
func reasonOf(t *testResult) string {
	switch t.outcome {
	case outcomePass:
		return ""
	case outcomeNone:
		if p := firstMatching(t.output, func(s string) bool { return strings.Contains(s, "panic:") }); p != "" {
			return p
		}
		return "did not finish (test binary timed out or exited)"
	}
	for i, line := range t.output {
		if !isLocationLine(strings.TrimSpace(line)) {
			continue
		}
		// The assertion library spreads one failure over a few indented
		// lines ("f_test.go:33:", "f_test.go:33: expected nil error",
		// "↪ error: ..."): join them, without the locations.
		var parts []string
		for _, l := range t.output[i:min(i+6, len(t.output))] {
			trimmed := strings.TrimSpace(l)
			if trimmed == "" || !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") ||
				strings.HasPrefix(trimmed, "---") || strings.HasPrefix(trimmed, "===") {
				break
			}
			for isLocationLine(trimmed) {
				_, trimmed, _ = strings.Cut(trimmed, ": ")
				trimmed = strings.TrimSpace(trimmed)
			}
			if trimmed != "" {
				parts = append(parts, trimmed)
			}
		}
		if len(parts) > 0 {
			return oneLine(strings.Join(parts, " "))
		}
	}
	if p := firstMatching(t.output, func(s string) bool { return strings.Contains(s, "panic:") }); p != "" {
		return p
	}
	return "(no message)"
}

// isLocationLine reports whether s starts with "file_test.go:NN: ".
func isLocationLine(s string) bool {
	file, rest, ok := strings.Cut(s, ".go:")
	if !ok || strings.ContainsAny(file, " \t") {
		return false
	}
	num, _, ok := strings.Cut(rest, ":")
	if !ok || num == "" {
		return false
	}
	for _, c := range num {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func firstMatching(lines []string, pred func(string) bool) string {
	for _, l := range lines {
		if pred(strings.TrimSpace(l)) {
			return oneLine(strings.TrimSpace(l))
		}
	}
	return ""
}

// oneLine makes s safe for a markdown table cell and short enough to read.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// report is everything CONFORMANCE.md shows.
type report struct {
	tests                   []*testResult // sorted by file, then name
	fileOf                  map[string]string
	serverBacked            map[string]bool
	pass, fail, skip        int
	serverPass, serverTotal int
	regressions             []*testResult
}

func summarize(res map[string]*testResult, files map[string]string, serverBacked map[string]bool, base map[string]bool) *report {
	rep := &report{fileOf: files, serverBacked: serverBacked}
	for _, t := range res {
		rep.tests = append(rep.tests, t)
	}
	// A baselined test that never ran (renamed, or the run died early) is
	// a regression too.
	for name := range base {
		if res[name] == nil {
			rep.regressions = append(rep.regressions, &testResult{name: name, outcome: outcomeNone, reason: "did not run"})
		}
	}
	sort.Slice(rep.tests, func(i, j int) bool {
		a, b := rep.tests[i], rep.tests[j]
		if files[a.name] != files[b.name] {
			return files[a.name] < files[b.name]
		}
		return a.name < b.name
	})
	for _, t := range rep.tests {
		switch t.outcome {
		case outcomePass:
			rep.pass++
		case outcomeSkip:
			rep.skip++
		default:
			rep.fail++
		}
		if serverBacked[t.name] {
			rep.serverTotal++
			if t.outcome == outcomePass {
				rep.serverPass++
			}
		}
		if base[t.name] && t.outcome != outcomePass {
			rep.regressions = append(rep.regressions, t)
		}
	}
	sort.Slice(rep.regressions, func(i, j int) bool { return rep.regressions[i].name < rep.regressions[j].name })
	return rep
}

func render(rep *report, module string, seconds int) string {
	var b strings.Builder
	b.WriteString("# Conformance: the nomad/api test suite against Drover\n\n")
	b.WriteString("Generated by `make conformance` from a real run: the unmodified test suite of\n")
	fmt.Fprintf(&b, "`%s`, with `bin/drover` on `$PATH` as `nomad`.\n", module)
	b.WriteString("Do not edit by hand. Tests listed in `scripts/conformance/baseline.txt` must keep passing (`make test` checks).\n\n")
	fmt.Fprintf(&b, "**%d passed, %d failed, %d skipped** of %d tests", rep.pass, rep.fail, rep.skip, len(rep.tests))
	fmt.Fprintf(&b, "; server-backed (start an agent): **%d of %d pass**", rep.serverPass, rep.serverTotal)
	if seconds > 0 {
		fmt.Fprintf(&b, "; the run took %ds", seconds)
	}
	b.WriteString(".\n\n## Per test file\n\n| file | passed | failed | skipped |\n|---|---:|---:|---:|\n")
	type counts struct{ pass, fail, skip int }
	perFile := map[string]*counts{}
	var order []string
	for _, t := range rep.tests {
		file := rep.file(t.name)
		c := perFile[file]
		if c == nil {
			c = &counts{}
			perFile[file] = c
			order = append(order, file)
		}
		switch t.outcome {
		case outcomePass:
			c.pass++
		case outcomeSkip:
			c.skip++
		default:
			c.fail++
		}
	}
	for _, file := range order {
		c := perFile[file]
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", file, c.pass, c.fail, c.skip)
	}
	b.WriteString("\n## Failing tests\n\nThe reason is the first failure line the test printed.\n\n| test | file | reason |\n|---|---|---|\n")
	for _, t := range rep.tests {
		if t.outcome == outcomePass || t.outcome == outcomeSkip {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", t.name, rep.file(t.name), t.reason)
	}
	b.WriteString("\n## Skipped tests\n\n| test | file | reason |\n|---|---|---|\n")
	for _, t := range rep.tests {
		if t.outcome == outcomeSkip {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", t.name, rep.file(t.name), t.reason)
		}
	}
	return b.String()
}

func (rep *report) file(test string) string {
	if f := rep.fileOf[test]; f != "" {
		return f
	}
	return "(unknown)"
}
