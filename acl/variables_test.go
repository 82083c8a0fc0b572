package acl

import "testing"

// TestVariableCapabilities: read and write include list; exact path rules
// beat the workload's own paths, which beat globs.
func TestVariableCapabilities(t *testing.T) {
	p, err := Parse(`namespace "*" {
  variables {
    path "nomad/jobs" { capabilities = ["list"] }
    path "nomad/jobs/*" { capabilities = ["deny"] }
    path "w/*" { capabilities = ["write"] }
    path "r/*" { capabilities = ["read"] }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := Compile([]*Policy{p})
	a := base.WithWorkload("prod", "example", "web", "httpd")
	cases := []struct {
		ns, path, op string
		want         bool
	}{
		{"prod", "w/x", VariablesCapabilityList, true},
		{"prod", "w/x", VariablesCapabilityRead, false},
		{"prod", "r/x", VariablesCapabilityList, true},
		{"prod", "r/x", VariablesCapabilityWrite, false},
		{"prod", "r/x", VariablesCapabilityDestroy, false},
		// The workload's own paths beat the glob deny...
		{"prod", "nomad/jobs/example", VariablesCapabilityRead, true},
		{"prod", "nomad/jobs/example/web", VariablesCapabilityRead, true},
		{"prod", "nomad/jobs/example/web/httpd", VariablesCapabilityList, true},
		{"prod", "nomad/jobs/example/web/httpd", VariablesCapabilityWrite, false},
		// ...but not the exact rule, and only in the workload's namespace.
		{"prod", "nomad/jobs", VariablesCapabilityRead, false},
		{"prod", "nomad/jobs", VariablesCapabilityList, true},
		{"dev", "nomad/jobs/example", VariablesCapabilityRead, false},
		{"prod", "nomad/jobs/example2", VariablesCapabilityRead, false},
		{"prod", "nomad/jobs/example/web/httpd/more", VariablesCapabilityRead, false},
		{"prod", "nomad/jobs/example/other", VariablesCapabilityRead, false},
	}
	for _, c := range cases {
		if got := a.AllowVariableOperation(c.ns, c.path, c.op); got != c.want {
			t.Errorf("%s %s %s: got %v, want %v", c.ns, c.path, c.op, got, c.want)
		}
	}
	if base.AllowVariableOperation("prod", "nomad/jobs/example", VariablesCapabilityRead) {
		t.Error("without WithWorkload nothing is implicit")
	}
	var off *ACL
	if off.WithWorkload("a", "b", "c", "d") != nil || !off.AllowVariableOperation("x", "y", "write") {
		t.Error("a nil ACL (ACLs off) allows everything")
	}
	// Without any policy, only the workload's own paths.
	own, _ := Compile(nil)
	own = own.WithWorkload("default", "j", "g", "t")
	if !own.AllowVariableOperation("default", "nomad/jobs", VariablesCapabilityRead) ||
		own.AllowVariableOperation("default", "nomad", VariablesCapabilityRead) {
		t.Error("implicit nomad/jobs read, nothing above it")
	}
}
