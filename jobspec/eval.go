package jobspec

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Roots of traversals that are resolved by the parser itself. They never get
// runtime placeholders, so a reference to something undeclared under them is
// an error instead of surviving as "${var.x}".
const (
	rootVar   = "var"
	rootLocal = "local"
)

// evalExpr evaluates expr in ctx.
//
// Every traversal whose root is neither var/local nor otherwise defined in ctx
// is a runtime interpolation (NOMAD_PORT_http, attr.kernel.name, node.unique.name,
// meta.rack, ...). For those, a child context gets placeholder objects whose
// leaves are the literal string "${<traversal>}", so the text reaches the job
// verbatim for the Nomad client to interpolate later.
func evalExpr(expr hcl.Expression, ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	traversals := expr.Variables()
	if diags := checkDeclared(traversals, ctx); diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	evalCtx := ctx
	if ph := placeholders(traversals, ctx); len(ph) > 0 {
		evalCtx = ctx.NewChild()
		evalCtx.Variables = ph
	}
	return expr.Value(evalCtx)
}

// lookupVar finds a variable by name in ctx or its parents.
func lookupVar(ctx *hcl.EvalContext, name string) (cty.Value, bool) {
	for c := ctx; c != nil; c = c.Parent() {
		if v, ok := c.Variables[name]; ok {
			return v, true
		}
	}
	return cty.NilVal, false
}

// checkDeclared reports var.X / local.X references whose X is not declared,
// with the traversal's source range.
func checkDeclared(traversals []hcl.Traversal, ctx *hcl.EvalContext) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, t := range traversals {
		if t.IsRelative() || len(t) < 2 {
			continue
		}
		root := t.RootName()
		if root != rootVar && root != rootLocal {
			continue
		}
		obj, ok := lookupVar(ctx, root)
		attr, isAttr := t[1].(hcl.TraverseAttr)
		if !ok || !isAttr || !obj.Type().IsObjectType() || obj.Type().HasAttribute(attr.Name) {
			continue
		}
		rng := t.SourceRange()
		if root == rootVar {
			diags = append(diags, errDiag(&rng, "Undefined variable",
				fmt.Sprintf("No variable named %q is declared; add a variable block for it.", attr.Name)))
		} else {
			diags = append(diags, errDiag(&rng, "Undefined local",
				fmt.Sprintf("No local value named %q is defined in a locals block.", attr.Name)))
		}
	}
	return diags
}

// phNode is one step of a placeholder tree. A node without children becomes
// the string "${text}"; a node with children becomes an object. When a path is
// used both as a leaf and as a prefix of a longer path, the object wins and the
// leaf use fails evaluation with an ordinary HCL diagnostic.
type phNode struct {
	text     string
	children map[string]*phNode
}

func (n *phNode) child(key, text string) *phNode {
	if n.children == nil {
		n.children = map[string]*phNode{}
	}
	c, ok := n.children[key]
	if !ok {
		c = &phNode{text: text}
		n.children[key] = c
	}
	return c
}

func (n *phNode) value() cty.Value {
	if len(n.children) == 0 {
		return cty.StringVal("${" + n.text + "}")
	}
	attrs := make(map[string]cty.Value, len(n.children))
	for k, c := range n.children {
		attrs[k] = c.value()
	}
	return cty.ObjectVal(attrs)
}

// placeholders builds placeholder values for all traversal roots not defined in
// ctx (see evalExpr).
func placeholders(traversals []hcl.Traversal, ctx *hcl.EvalContext) map[string]cty.Value {
	roots := map[string]*phNode{}
	for _, t := range traversals {
		if t.IsRelative() {
			continue
		}
		name := t.RootName()
		if name == rootVar || name == rootLocal {
			continue
		}
		if _, defined := lookupVar(ctx, name); defined {
			continue
		}
		n, ok := roots[name]
		if !ok {
			n = &phNode{text: name}
			roots[name] = n
		}
		for _, step := range t[1:] {
			key, text, ok := stepKey(step, n.text)
			if !ok {
				break
			}
			n = n.child(key, text)
		}
	}
	out := make(map[string]cty.Value, len(roots))
	for name, n := range roots {
		out[name] = n.value()
	}
	return out
}

// stepKey returns the object key and source-like text for an attribute or
// string-index traversal step; other steps (numeric index, splat) stop the walk.
func stepKey(step hcl.Traverser, parent string) (key, text string, ok bool) {
	switch s := step.(type) {
	case hcl.TraverseAttr:
		return s.Name, parent + "." + s.Name, true
	case hcl.TraverseIndex:
		if s.Key.IsKnown() && !s.Key.IsNull() && s.Key.Type() == cty.String {
			k := s.Key.AsString()
			return k, fmt.Sprintf("%s[%q]", parent, k), true
		}
	}
	return "", "", false
}

// sortedKeys returns the keys of m in lexical order (deterministic diagnostics).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
