package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// layerRule forbids packages matching from to depend on packages under any
// of forbidden, except those under allowed. Direct rules look at a
// package's own imports; the others at everything it links (go list -deps).
// A pending rule is one the code does not keep yet: the test reports it and
// fails once it holds, so that it is made enforced and stays so.
type layerRule struct {
	from      string // package path relative to the module; a trailing /... matches below it too
	forbidden []string
	allowed   []string
	direct    bool
	reason    string
	pending   string // why it does not hold yet; "" for an enforced rule
}

var layerRules = []layerRule{
	{
		from: "client/...", forbidden: []string{"nomad", "command", "scheduler"}, allowed: []string{"nomad/structs"},
		reason: "the client speaks to servers over HTTP only; it shares the domain types and nothing of the server",
	},
	{
		from: "nodesim/...", forbidden: []string{"nomad", "command", "scheduler"}, allowed: []string{"nomad/structs"},
		reason: "simulated nodes speak the client protocol over HTTP, like real clients",
	},
	{
		from: "scheduler/...", forbidden: []string{"nomad", "client", "command", "drivers"}, allowed: []string{"nomad/structs"},
		reason: "the schedulers are pure decisions over the domain types; the server feeds them state",
	},
	{
		from: "drivers/...", forbidden: []string{"client", "nomad", "command", "scheduler"},
		reason: "drivers run tasks; the client drives them through drivers.Driver and they know nothing above",
	},
	{
		from: "jobspec/...", forbidden: []string{"nomad", "client", "command", "scheduler", "drivers"},
		reason: "the parser turns HCL into nomad/api jobs and needs nothing of Drover",
	},
	{
		from: "acl/...", forbidden: []string{"nomad", "client", "command", "scheduler", "drivers"}, allowed: []string{"nomad/structs"},
		reason: "policies and capability checks are pure; the server and the HTTP edge both use them",
	},
	{
		from: "nomad/structs", forbidden: []string{"nomad", "client", "command", "scheduler", "drivers", "helper"}, allowed: []string{"nomad/structs"},
		reason: "the domain types are the bottom layer",
	},
	{
		from: "command/agent", forbidden: []string{"nomad/state", "github.com/hashicorp/go-memdb"}, direct: true,
		reason: "the HTTP adapter decodes, resolves the token, calls the server and encodes; reads go through the server",
	},
	{
		from: "command", forbidden: []string{"nomad"}, allowed: []string{"nomad/structs"}, direct: true,
		reason: "the CLI is a nomad/api client; its wire types live in one wire package, not in the server's",
	},
	{
		from: "wire/...", forbidden: []string{module}, allowed: []string{"nomad/structs", "signals"},
		reason: "the bodies both ends of a request share; they carry nomad/api and nomad/structs values (and what structs links: signals) and nothing of either end",
	},
	{
		from: "nomad/...", forbidden: []string{"wire", "github.com/hashicorp/nomad/api"},
		reason: "the server never sees nomad/api types; the HTTP adapter converts them (helper/apiconv) and encodes the wire bodies",
	},
}

// goPackage is what go list -json says of a package.
type goPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) map[string]goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]goPackage{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs
}

// under reports whether path is pattern or below it; a pattern without a
// dot in its first element is relative to the module.
func under(path, pattern string) bool {
	if first, _, _ := strings.Cut(pattern, "/"); !strings.Contains(first, ".") {
		pattern = module + "/" + pattern
	}
	return path == pattern || strings.HasPrefix(path, pattern+"/")
}

func (r layerRule) matches(path string) bool {
	if base, ok := strings.CutSuffix(r.from, "/..."); ok {
		return under(path, base)
	}
	return path == module+"/"+r.from
}

// violations lists "pkg -> dep" for every dependency the rule forbids.
func (r layerRule) violations(pkgs map[string]goPackage) []string {
	var out []string
	for path, p := range pkgs {
		if !r.matches(path) {
			continue
		}
		deps := p.Deps
		if r.direct {
			deps = p.Imports
		}
		for _, dep := range deps {
			if r.forbids(path, dep) {
				out = append(out, strings.TrimPrefix(path, module+"/")+" -> "+strings.TrimPrefix(dep, module+"/"))
			}
		}
	}
	return out
}

func (r layerRule) forbids(from, dep string) bool {
	if r.matches(dep) && strings.HasSuffix(r.from, "/...") {
		return false // a package's own subpackages
	}
	for _, a := range r.allowed {
		if under(dep, a) {
			return false
		}
	}
	for _, f := range r.forbidden {
		if under(dep, f) && dep != from {
			return true
		}
	}
	return false
}

// TestLayers holds the import rules of docs/architecture.md.
func TestLayers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	pkgs := listPackages(t)
	if len(pkgs) < 50 {
		t.Fatalf("go list found %d packages: the module was not read", len(pkgs))
	}
	for _, r := range layerRules {
		matched := false
		for path := range pkgs {
			matched = matched || r.matches(path)
		}
		if !matched {
			t.Errorf("rule for %s matches no package", r.from)
			continue
		}
		v := r.violations(pkgs)
		switch {
		case r.pending == "" && len(v) > 0:
			t.Errorf("%s may not depend on %v (%s):\n\t%s", r.from, r.forbidden, r.reason, strings.Join(v, "\n\t"))
		case r.pending != "" && len(v) == 0:
			t.Errorf("the pending rule for %s holds now: make it enforced (drop pending: %q)", r.from, r.pending)
		case r.pending != "":
			t.Logf("pending rule for %s (%s): %d imports left", r.from, r.pending, len(v))
		}
	}
}

// TestLayerRuleCatchesAViolation: the checker itself finds a forbidden
// dependency, so a rule that passes is one the code keeps.
func TestLayerRuleCatchesAViolation(t *testing.T) {
	pkgs := map[string]goPackage{
		module + "/client":             {ImportPath: module + "/client", Deps: []string{module + "/nomad/structs", module + "/nomad/state"}},
		module + "/client/allocrunner": {ImportPath: module + "/client/allocrunner", Deps: []string{module + "/drivers"}},
		module + "/command/agent":      {ImportPath: module + "/command/agent", Imports: []string{"github.com/hashicorp/go-memdb"}},
	}
	client := layerRules[0]
	if got := client.violations(pkgs); len(got) != 1 || got[0] != "client -> nomad/state" {
		t.Fatalf("client rule found %v, want [client -> nomad/state]", got)
	}
	var agent layerRule
	for _, r := range layerRules {
		if r.from == "command/agent" {
			agent = r
		}
	}
	if got := agent.violations(pkgs); len(got) != 1 || got[0] != "command/agent -> github.com/hashicorp/go-memdb" {
		t.Fatalf("agent rule found %v", got)
	}
}
