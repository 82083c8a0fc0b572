package config

import (
	"fmt"
	"math/big"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// opaqueBody converts a body whose schema belongs to someone else (a
// plugin's config) into Go values; see PluginConfig for the mapping.
func opaqueBody(body hcl.Body) (map[string]any, hcl.Diagnostics) {
	if sb, ok := body.(*hclsyntax.Body); ok {
		return syntaxBody(sb)
	}
	// JSON: nested blocks are plain objects, so everything is an attribute.
	attrs, diags := body.JustAttributes()
	out := map[string]any{}
	for name, a := range attrs {
		v, d := attrValue(a)
		diags = append(diags, d...)
		out[name] = v
	}
	return out, diags
}

func syntaxBody(body *hclsyntax.Body) (map[string]any, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	out := map[string]any{}
	for name, a := range body.Attributes {
		v, d := attrValue(a.AsHCLAttribute())
		diags = append(diags, d...)
		out[name] = v
	}
	// Group blocks by type, keeping source order within a type.
	byType := map[string][]*hclsyntax.Block{}
	var types []string
	for _, b := range body.Blocks {
		if _, ok := byType[b.Type]; !ok {
			types = append(types, b.Type)
		}
		byType[b.Type] = append(byType[b.Type], b)
	}
	sort.Strings(types)
	for _, ty := range types {
		blocks := byType[ty]
		if a, ok := body.Attributes[ty]; ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("%q is both an argument and a block", ty),
				Detail:   fmt.Sprintf("The argument is at line %d; use one form only.", a.SrcRange.Start.Line),
				Subject:  blocks[0].DefRange().Ptr(),
			})
			continue
		}
		v, d := syntaxBlocks(blocks)
		diags = append(diags, d...)
		out[ty] = v
	}
	return out, diags
}

// syntaxBlocks converts the blocks of one type: unlabelled blocks become a
// map (one block) or a list of maps (several); labelled blocks become maps
// keyed by their first label, recursively for the remaining labels.
func syntaxBlocks(blocks []*hclsyntax.Block) (any, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	labelled := len(blocks[0].Labels) > 0
	for _, b := range blocks[1:] {
		if (len(b.Labels) > 0) != labelled {
			return nil, append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("Inconsistent %q blocks", b.Type),
				Detail:   "Blocks of one type must either all have labels or none.",
				Subject:  b.DefRange().Ptr(),
			})
		}
	}
	if !labelled {
		var list []any
		for _, b := range blocks {
			m, d := syntaxBody(b.Body)
			diags = append(diags, d...)
			list = append(list, m)
		}
		if len(list) == 1 {
			return list[0], diags
		}
		return list, diags
	}
	byLabel := map[string][]*hclsyntax.Block{}
	var labels []string
	for _, b := range blocks {
		l := b.Labels[0]
		if _, ok := byLabel[l]; !ok {
			labels = append(labels, l)
		}
		// Drop the first label for the next level down.
		inner := *b
		inner.Labels = b.Labels[1:]
		inner.LabelRanges = b.LabelRanges[1:]
		byLabel[l] = append(byLabel[l], &inner)
	}
	out := map[string]any{}
	for _, l := range labels {
		group := byLabel[l]
		if len(group[0].Labels) == 0 && len(group) > 1 {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("Duplicate %s %q block", group[1].Type, l),
				Detail:   "Each label may be used once per block type.",
				Subject:  group[1].DefRange().Ptr(),
			})
			continue
		}
		v, d := syntaxBlocks(group)
		diags = append(diags, d...)
		out[l] = v
	}
	return out, diags
}

func attrValue(a *hcl.Attribute) (any, hcl.Diagnostics) {
	val, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return nil, diags
	}
	return ctyToGo(val), diags
}

// ctyToGo converts a known cty value: whole numbers that fit become int,
// other numbers float64, collections []any or map[string]any, null nil.
func ctyToGo(v cty.Value) any {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	ty := v.Type()
	switch {
	case ty == cty.Bool:
		return v.True()
	case ty == cty.String:
		return v.AsString()
	case ty == cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInt() {
			if i, acc := bf.Int64(); acc == big.Exact && int64(int(i)) == i {
				return int(i)
			}
		}
		f, _ := bf.Float64()
		return f
	case ty.IsListType() || ty.IsTupleType() || ty.IsSetType():
		out := make([]any, 0, v.LengthInt())
		for _, e := range v.AsValueSlice() {
			out = append(out, ctyToGo(e))
		}
		return out
	case ty.IsMapType() || ty.IsObjectType():
		out := make(map[string]any, v.LengthInt())
		for k, e := range v.AsValueMap() {
			out[k] = ctyToGo(e)
		}
		return out
	default:
		return nil
	}
}
