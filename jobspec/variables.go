package jobspec

import (
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// envVarPrefix marks environment variables that supply jobspec variables.
const envVarPrefix = "NOMAD_VAR_"

// variable is one declared `variable "name" {}` block.
type variable struct {
	name        string
	typ         cty.Type  // cty.DynamicPseudoType when no type is given
	def         cty.Value // meaningful only when hasDef
	hasDef      bool
	declRange   hcl.Range
	validations []validation
}

// validation is one `validation { condition, error_message }` block.
type validation struct {
	condition hcl.Expression
	message   hcl.Expression
}

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "default"}, {Name: "description"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "validation"}},
}

var validationSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "condition", Required: true},
		{Name: "error_message", Required: true},
	},
}

// declareVariables decodes all variable blocks. Duplicate names are errors.
func (p *parser) declareVariables(blocks hcl.Blocks) (map[string]*variable, hcl.Diagnostics) {
	decls := map[string]*variable{}
	var diags hcl.Diagnostics
	for _, b := range blocks {
		v, d := p.decodeVariable(b)
		diags = append(diags, d...)
		if v == nil {
			continue
		}
		if prev, dup := decls[v.name]; dup {
			diags = append(diags, errDiag(&b.DefRange, "Duplicate variable",
				fmt.Sprintf("Variable %q was already declared at %s.", v.name, prev.declRange)))
			continue
		}
		decls[v.name] = v
	}
	return decls, diags
}

func (p *parser) decodeVariable(b *hcl.Block) (*variable, hcl.Diagnostics) {
	name := b.Labels[0]
	if !hclsyntax.ValidIdentifier(name) {
		return nil, hcl.Diagnostics{errDiag(&b.LabelRanges[0], "Invalid variable name",
			fmt.Sprintf("%q is not a valid identifier.", name))}
	}
	content, diags := b.Body.Content(variableSchema)
	v := &variable{name: name, typ: cty.DynamicPseudoType, declRange: b.DefRange}
	if attr, ok := content.Attributes["type"]; ok {
		ty, d := typeexpr.TypeConstraint(attr.Expr)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.typ = ty
		}
	}
	if attr, ok := content.Attributes["default"]; ok {
		val, d := evalExpr(attr.Expr, &hcl.EvalContext{Functions: p.funcs})
		diags = append(diags, d...)
		if !d.HasErrors() {
			conv, err := convert.Convert(val, v.typ)
			if err != nil {
				diags = append(diags, errDiag(attr.Expr.Range().Ptr(),
					fmt.Sprintf("Invalid default for variable %q", name), err.Error()))
			} else {
				v.def, v.hasDef = conv, true
			}
		}
	}
	for _, vb := range content.Blocks {
		vc, d := vb.Body.Content(validationSchema)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.validations = append(v.validations, validation{
				condition: vc.Attributes["condition"].Expr,
				message:   vc.Attributes["error_message"].Expr,
			})
		}
	}
	return v, diags
}

// variableValues resolves every declared variable. Precedence, lowest first:
// default, NOMAD_VAR_<name> environment, -var-file (in order), -var (in order).
// It returns the object bound to `var`.
func (p *parser) variableValues(decls map[string]*variable, opts Options) (cty.Value, hcl.Diagnostics) {
	vals := map[string]cty.Value{}
	for name, v := range decls {
		if v.hasDef {
			vals[name] = v.def
		}
	}
	diags := applyEnvVars(decls, opts.Env, vals)
	for _, f := range opts.VarFiles {
		diags = append(diags, p.applyVarFile(decls, f, opts.Strict, vals)...)
	}
	for i, src := range opts.VarContents {
		diags = append(diags, p.applyVarSource(decls, fmt.Sprintf("<variables %d>", i+1), []byte(src), opts.Strict, vals)...)
	}
	for _, arg := range opts.ArgVars {
		diags = append(diags, applyArgVar(decls, arg, opts.Strict, vals)...)
	}
	for _, name := range sortedKeys(decls) {
		if _, ok := vals[name]; !ok {
			diags = append(diags, errDiag(&decls[name].declRange, "Missing value for required variable",
				fmt.Sprintf("Variable %q has no default; set it with -var, -var-file or %s%s.", name, envVarPrefix, name)))
		}
	}
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	for _, name := range sortedKeys(decls) {
		diags = append(diags, p.validate(decls[name], vals[name])...)
	}
	return cty.ObjectVal(vals), diags
}

// parseRawValue converts a string from -var or the environment to ty.
// Primitive and `any` types take the string as is (then convert); complex
// types parse it as an HCL expression, e.g. '["a","b"]' or '{k="v"}'.
func parseRawValue(raw string, ty cty.Type) (cty.Value, error) {
	if ty.IsPrimitiveType() || ty == cty.DynamicPseudoType {
		return convert.Convert(cty.StringVal(raw), ty)
	}
	expr, diags := hclsyntax.ParseExpression([]byte(raw), "<value>", hcl.InitialPos)
	if diags.HasErrors() {
		return cty.NilVal, fmt.Errorf("cannot parse %q: %s", raw, (&diagError{diags: diags}).Error())
	}
	val, diags := expr.Value(nil)
	if diags.HasErrors() {
		return cty.NilVal, fmt.Errorf("cannot evaluate %q: %s", raw, (&diagError{diags: diags}).Error())
	}
	return convert.Convert(val, ty)
}

// applyEnvVars applies NOMAD_VAR_<name>=value entries for declared variables;
// undeclared names are ignored even in strict mode (the environment is shared).
func applyEnvVars(decls map[string]*variable, env []string, vals map[string]cty.Value) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, kv := range env {
		rest, ok := strings.CutPrefix(kv, envVarPrefix)
		if !ok {
			continue
		}
		name, raw, _ := strings.Cut(rest, "=")
		v, declared := decls[name]
		if !declared {
			continue
		}
		val, err := parseRawValue(raw, v.typ)
		if err != nil {
			diags = append(diags, errDiag(nil, fmt.Sprintf("Invalid value for variable %q from %s%s", name, envVarPrefix, name), err.Error()))
			continue
		}
		vals[name] = val
	}
	return diags
}

// applyArgVar applies one "-var name=value" flag.
func applyArgVar(decls map[string]*variable, arg string, strict bool, vals map[string]cty.Value) hcl.Diagnostics {
	name, raw, ok := strings.Cut(arg, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return hcl.Diagnostics{errDiag(nil, "Invalid -var flag", fmt.Sprintf("%q is not of the form name=value.", arg))}
	}
	v, declared := decls[name]
	if !declared {
		if strict {
			return hcl.Diagnostics{errDiag(nil, "Undefined -var variable",
				fmt.Sprintf("A value was given for %q, but no variable block declares it.", name))}
		}
		return nil
	}
	val, err := parseRawValue(raw, v.typ)
	if err != nil {
		return hcl.Diagnostics{errDiag(nil, fmt.Sprintf("Invalid value for variable %q from -var", name), err.Error())}
	}
	vals[name] = val
	return nil
}

// applyVarFile applies the attributes of one -var-file (HCL, or HCL's JSON
// syntax for *.json). Values may use functions but not variables.
func (p *parser) applyVarFile(decls map[string]*variable, path string, strict bool, vals map[string]cty.Value) hcl.Diagnostics {
	src, err := os.ReadFile(path)
	if err != nil {
		return hcl.Diagnostics{errDiag(nil, "Failed to read variable file", err.Error())}
	}
	return p.applyVarSource(decls, path, src, strict, vals)
}

// applyVarSource applies the variable file src read from path (".json":
// JSON, else HCL).
func (p *parser) applyVarSource(decls map[string]*variable, path string, src []byte, strict bool, vals map[string]cty.Value) hcl.Diagnostics {
	var file *hcl.File
	var diags hcl.Diagnostics
	if strings.HasSuffix(strings.ToLower(path), ".json") {
		file, diags = hcljson.Parse(src, path)
	} else {
		file, diags = hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	}
	if diags.HasErrors() {
		return diags
	}
	attrs, diags := file.Body.JustAttributes()
	ctx := &hcl.EvalContext{Functions: p.funcs}
	for _, name := range sortedKeys(attrs) {
		attr := attrs[name]
		v, declared := decls[name]
		if !declared {
			if strict {
				diags = append(diags, errDiag(&attr.NameRange, "Undefined variable in variable file",
					fmt.Sprintf("A value was given for %q, but no variable block declares it.", name)))
			}
			continue
		}
		val, d := attr.Expr.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		conv, err := convert.Convert(val, v.typ)
		if err != nil {
			diags = append(diags, errDiag(attr.Expr.Range().Ptr(),
				fmt.Sprintf("Invalid value for variable %q", name), err.Error()))
			continue
		}
		vals[name] = conv
	}
	return diags
}

// validate runs the variable's validation blocks against its final value.
func (p *parser) validate(v *variable, val cty.Value) hcl.Diagnostics {
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{rootVar: cty.ObjectVal(map[string]cty.Value{v.name: val})},
		Functions: p.funcs,
	}
	var diags hcl.Diagnostics
	for _, vd := range v.validations {
		ok, d := evalExpr(vd.condition, ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		ok, err := convert.Convert(ok, cty.Bool)
		if err != nil || ok.IsNull() || !ok.IsKnown() {
			diags = append(diags, errDiag(vd.condition.Range().Ptr(), "Invalid validation condition",
				"The condition must evaluate to true or false."))
			continue
		}
		if ok.True() {
			continue
		}
		msg := "validation condition failed"
		if m, d := evalExpr(vd.message, ctx); !d.HasErrors() && m.Type() == cty.String && !m.IsNull() && m.IsKnown() {
			msg = m.AsString()
		}
		diags = append(diags, errDiag(vd.condition.Range().Ptr(),
			fmt.Sprintf("Invalid value for variable %q", v.name), msg))
	}
	return diags
}
