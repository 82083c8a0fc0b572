package jobspec

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// decodeOpaque decodes a schema-less body (driver `config {}`, scaling
// `policy {}`, ...) into plain Go data. Attributes become values via
// ctyToGo (a null attribute is omitted, as if unset); every nested block `name { ... }` is appended to a
// []map[string]any under "name" (so two `mount {}` blocks give a two-element
// list); labels nest (see addOpaqueBlock). `dynamic` blocks inside the body
// are expanded.
func (d *decoder) decodeOpaque(body hcl.Body) (map[string]any, hcl.Diagnostics) {
	var attrs hcl.Attributes
	var blocks hcl.Blocks
	var diags hcl.Diagnostics
	if schema := d.opaqueSchema(body); schema != nil {
		content, dd := body.Content(schema)
		diags = dd
		if content != nil {
			attrs, blocks = content.Attributes, content.Blocks
		}
	} else {
		attrs, diags = body.JustAttributes()
	}
	out := map[string]any{}
	for _, name := range sortedKeys(attrs) {
		val, dd := evalExpr(attrs[name].Expr, d.ctx)
		diags = append(diags, dd...)
		if !dd.HasErrors() && !val.IsNull() {
			out[name] = ctyToGo(val)
		}
	}
	for _, b := range blocks {
		diags = append(diags, d.addOpaqueBlock(out, b)...)
	}
	return out, diags
}

// addOpaqueBlock appends the decoded block b to out[b.Type]. Each label
// nests the body one level deeper, in the shape Nomad's jobs carry it
// (and the Nomad Autoscaler reads from a scaling policy):
// `check "cpu" { strategy "target-value" { target = 70 } }` becomes
// check: [{cpu: [{strategy: [{"target-value": [{target: 70}]}]}]}].
func (d *decoder) addOpaqueBlock(out map[string]any, b *hcl.Block) hcl.Diagnostics {
	m, diags := d.decodeOpaque(b.Body)
	for i := len(b.Labels) - 1; i >= 0; i-- {
		m = map[string]any{b.Labels[i]: []map[string]any{m}}
	}
	switch existing := out[b.Type].(type) {
	case nil:
		if _, isAttr := out[b.Type]; isAttr {
			return append(diags, opaqueConflict(b))
		}
		out[b.Type] = []map[string]any{m}
	case []map[string]any:
		out[b.Type] = append(existing, m)
	default:
		return append(diags, opaqueConflict(b))
	}
	return diags
}

func opaqueConflict(b *hcl.Block) *hcl.Diagnostic {
	return errDiag(b.DefRange.Ptr(), fmt.Sprintf("Duplicate %s", b.Type),
		fmt.Sprintf("%q is set both as an argument and as a block.", b.Type))
}

// opaqueSchema derives a schema for body from its syntax tree so that
// body.Content (which also expands nested `dynamic` blocks) can be used. The
// syntax body is found by source position: dynblock's wrappers report the
// wrapped body's MissingItemRange. It returns nil when no syntax is known.
func (d *decoder) opaqueSchema(body hcl.Body) *hcl.BodySchema {
	rng := body.MissingItemRange()
	syn := d.bodies[rng.Start.Byte]
	if syn == nil || rng.Filename != d.path {
		return nil
	}
	schema := &hcl.BodySchema{}
	for name := range syn.Attributes {
		schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: name})
	}
	seen := map[string]bool{}
	for _, b := range syn.Blocks {
		typ, nlabels := b.Type, len(b.Labels)
		if typ == "dynamic" {
			if len(b.Labels) == 0 {
				continue // dynblock reports the missing label
			}
			typ, nlabels = b.Labels[0], dynamicLabelCount(b.Body)
		}
		if seen[typ] {
			continue
		}
		seen[typ] = true
		schema.Blocks = append(schema.Blocks, hcl.BlockHeaderSchema{Type: typ, LabelNames: labelPlaceholders(nlabels)})
	}
	return schema
}

// dynamicLabelCount is the number of labels a dynamic block generates, read
// syntactically from its `labels = [...]` argument (0 when absent).
func dynamicLabelCount(body *hclsyntax.Body) int {
	attr, ok := body.Attributes["labels"]
	if !ok {
		return 0
	}
	if tup, ok := attr.Expr.(*hclsyntax.TupleConsExpr); ok {
		return len(tup.Exprs)
	}
	return 0
}

// indexBodies maps the start offset of every syntax body in the file to it.
func indexBodies(root *hclsyntax.Body) map[int]*hclsyntax.Body {
	idx := map[int]*hclsyntax.Body{}
	_ = hclsyntax.VisitAll(root, func(n hclsyntax.Node) hcl.Diagnostics {
		if b, ok := n.(*hclsyntax.Body); ok {
			idx[b.SrcRange.Start.Byte] = b
		}
		return nil
	})
	return idx
}

func labelPlaceholders(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = "label"
	}
	return names
}
