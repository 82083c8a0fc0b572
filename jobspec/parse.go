package jobspec

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/dynblock"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/nomad/api"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// Options control variable input for Parse.
type Options struct {
	ArgVars  []string // "-var" flags, each "name=value"
	VarFiles []string // "-var-file" paths (HCL .hcl/.vars or .json)
	Env      []string // environment, os.Environ() form; NOMAD_VAR_<name> supplies variables
	Strict   bool     // error on -var/-var-file values for undeclared variables
	// VarContents are variable files given by content (HCL), applied
	// after VarFiles (the server's /v1/jobs/parse receives them so).
	VarContents []string
	// NoFS makes the file system functions (file, fileexists, fileset,
	// filebase64, fileescaped, abspath, pathexpand) fail and bounds
	// bcrypt's cost: a server parsing a jobspec for a client must not read
	// its own files nor be kept busy.
	NoFS bool
}

// stdinPath is the path argument that makes ParseFile read standard input.
const stdinPath = "-"

// Parse parses one jobspec. path is used for error positions and to detect ".json" (JSON jobspec:
// either {"Job": {...}} or a bare job object in api.Job JSON form). src is the file content.
//
// The returned job is not canonicalized. Errors carry "path:line,col" positions.
// Variables are read only from opts (pass os.Environ() as opts.Env to honour
// NOMAD_VAR_*). As in Nomad, relative paths in file() and the other file
// functions resolve against the current working directory, not path's directory.
func Parse(path string, src []byte, opts Options) (*api.Job, error) {
	if isJSON(path, src) {
		return parseJSON(path, src)
	}
	return parseHCL(path, src, opts)
}

// ParseFile reads path (or stdin when path is "-") and calls Parse.
func ParseFile(path string, opts Options) (*api.Job, error) {
	var src []byte
	var err error
	if path == stdinPath {
		src, err = io.ReadAll(os.Stdin)
	} else {
		src, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("reading jobspec: %w", err)
	}
	return Parse(path, src, opts)
}

// isJSON reports whether src is a JSON job: by extension, or for stdin by
// content (an HCL config cannot start with "{").
func isJSON(path string, src []byte) bool {
	if strings.EqualFold(filepath.Ext(path), ".json") {
		return true
	}
	return path == stdinPath && bytes.HasPrefix(bytes.TrimSpace(src), []byte("{"))
}

// parser holds per-file state shared by the parse phases.
type parser struct {
	path   string
	funcs  map[string]function.Function
	bodies map[int]*hclsyntax.Body
}

var rootSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "job", LabelNames: []string{"id"}},
	},
}

func parseHCL(path string, src []byte, opts Options) (*api.Job, error) {
	name := path
	if path == stdinPath {
		name = "<stdin>"
	}
	file, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diagsToError(diags)
	}
	body, ok := file.Body.(*hclsyntax.Body)
	if !ok {
		return nil, fmt.Errorf("%s: unexpected HCL body type %T", name, file.Body)
	}
	funcs := functions()
	if opts.NoFS {
		disableFS(funcs)
	}
	p := &parser{path: name, funcs: funcs, bodies: indexBodies(body)}
	job, diags := p.parse(body, opts)
	if err := diagsToError(diags); err != nil {
		return nil, err
	}
	return job, nil
}

// parse runs the phases: top-level blocks, variables, locals, then the job.
func (p *parser) parse(body *hclsyntax.Body, opts Options) (*api.Job, hcl.Diagnostics) {
	content, diags := body.Content(rootSchema)
	if diags.HasErrors() {
		return nil, diags
	}
	var varBlocks, localBlocks, jobBlocks hcl.Blocks
	for _, b := range content.Blocks {
		switch b.Type {
		case "variable":
			varBlocks = append(varBlocks, b)
		case "locals":
			localBlocks = append(localBlocks, b)
		case "job":
			jobBlocks = append(jobBlocks, b)
		}
	}
	if d := checkJobCount(jobBlocks, body); d != nil {
		return nil, hcl.Diagnostics{d}
	}
	decls, diags := p.declareVariables(varBlocks)
	if diags.HasErrors() {
		return nil, diags
	}
	varObj, diags := p.variableValues(decls, opts)
	if diags.HasErrors() {
		return nil, diags
	}
	localObj, diags := evalLocals(localBlocks, varObj, p.funcs)
	if diags.HasErrors() {
		return nil, diags
	}
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{rootVar: varObj, rootLocal: localObj},
		Functions: p.funcs,
	}
	return p.decodeJob(jobBlocks[0], ctx)
}

// checkJobCount requires exactly one job block.
func checkJobCount(jobs hcl.Blocks, body *hclsyntax.Body) *hcl.Diagnostic {
	switch len(jobs) {
	case 0:
		rng := body.MissingItemRange()
		return errDiag(&rng, "Missing job block", "A jobspec must contain exactly one job block.")
	case 1:
		return nil
	}
	return errDiag(jobs[1].DefRange.Ptr(), "Duplicate job block",
		fmt.Sprintf("A jobspec must contain exactly one job block; the first is at %s.", jobs[0].DefRange))
}

// decodeJob expands dynamic blocks in the job body and decodes it. The label
// becomes ID (and Name unless `name` is set); static ports are normalized.
func (p *parser) decodeJob(block *hcl.Block, ctx *hcl.EvalContext) (*api.Job, hcl.Diagnostics) {
	id := block.Labels[0]
	job := &api.Job{ID: new(id)}
	d := &decoder{ctx: ctx, path: p.path, bodies: p.bodies}
	diags := d.decodeBody(dynblock.Expand(block.Body, ctx), reflect.ValueOf(job).Elem())
	if job.Name == nil {
		job.Name = new(id)
	}
	normalizePorts(job)
	normalizeIdentities(job)
	normalizeParsed(job)
	return job, diags
}
