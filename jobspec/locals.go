package jobspec

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// evalLocals evaluates all `locals {}` blocks. Locals may reference variables
// and each other in any order; they are evaluated in dependency order and a
// cycle is an error. It returns the object bound to `local`.
func evalLocals(blocks hcl.Blocks, varObj cty.Value, funcs map[string]function.Function) (cty.Value, hcl.Diagnostics) {
	attrs, diags := collectLocals(blocks)
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	deps := map[string][]string{}
	for name, attr := range attrs {
		d, dd := localDeps(attr, attrs)
		deps[name] = d
		diags = append(diags, dd...)
	}
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	done := map[string]cty.Value{}
	for len(done) < len(attrs) {
		progress := false
		for _, name := range sortedKeys(attrs) {
			if _, ok := done[name]; ok || !allDone(deps[name], done) {
				continue
			}
			ctx := &hcl.EvalContext{
				Variables: map[string]cty.Value{rootVar: varObj, rootLocal: cty.ObjectVal(done)},
				Functions: funcs,
			}
			val, d := evalExpr(attrs[name].Expr, ctx)
			if d.HasErrors() {
				return cty.DynamicVal, append(diags, d...)
			}
			done[name], progress = val, true
		}
		if !progress {
			return cty.DynamicVal, append(diags, cycleDiag(attrs, done))
		}
	}
	return cty.ObjectVal(done), diags
}

// collectLocals merges the attributes of every locals block; a name defined
// twice is an error.
func collectLocals(blocks hcl.Blocks) (hcl.Attributes, hcl.Diagnostics) {
	all := hcl.Attributes{}
	var diags hcl.Diagnostics
	for _, b := range blocks {
		attrs, d := b.Body.JustAttributes()
		diags = append(diags, d...)
		for name, attr := range attrs {
			if prev, dup := all[name]; dup {
				diags = append(diags, errDiag(&attr.NameRange, "Duplicate local value",
					fmt.Sprintf("Local %q was already defined at %s.", name, prev.NameRange)))
				continue
			}
			all[name] = attr
		}
	}
	return all, diags
}

// localDeps lists the locals referenced by attr; references to undefined
// locals are errors.
func localDeps(attr *hcl.Attribute, all hcl.Attributes) ([]string, hcl.Diagnostics) {
	var deps []string
	var diags hcl.Diagnostics
	for _, t := range attr.Expr.Variables() {
		if t.IsRelative() || t.RootName() != rootLocal || len(t) < 2 {
			continue
		}
		step, ok := t[1].(hcl.TraverseAttr)
		if !ok {
			continue
		}
		if _, defined := all[step.Name]; !defined {
			rng := t.SourceRange()
			diags = append(diags, errDiag(&rng, "Undefined local",
				fmt.Sprintf("No local value named %q is defined in a locals block.", step.Name)))
			continue
		}
		deps = append(deps, step.Name)
	}
	return deps, diags
}

func allDone(names []string, done map[string]cty.Value) bool {
	for _, n := range names {
		if _, ok := done[n]; !ok {
			return false
		}
	}
	return true
}

// cycleDiag reports the locals that could not be resolved.
func cycleDiag(attrs hcl.Attributes, done map[string]cty.Value) *hcl.Diagnostic {
	var stuck []string
	for _, name := range sortedKeys(attrs) {
		if _, ok := done[name]; !ok {
			stuck = append(stuck, name)
		}
	}
	rng := attrs[stuck[0]].NameRange
	return errDiag(&rng, "Circular reference in locals",
		fmt.Sprintf("These locals depend on each other: %s.", strings.Join(stuck, ", ")))
}
