package structs

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template/parse"
	"time"
)

// Template is a task's `template` block: a consul-template template the
// client renders into the allocation directory before the task starts and
// again whenever the Nomad variables or services it reads change. The
// fields follow api.Template (defaults filled by its Canonicalize);
// vault_grace is refused at the edge (no Vault integration).
type Template struct {
	SourcePath    string // read from the task dir (or the host with disable_file_sandbox)
	DestPath      string // relative to the task dir; must stay in the alloc dir
	EmbeddedTmpl  string // the template text (data = ...)
	ChangeMode    string // restart, signal, noop or script
	ChangeSignal  string // for signal, e.g. "SIGHUP"
	ChangeScript  *ChangeScript
	Splay         time.Duration // the most a change is delayed (a random part of it)
	Perms         string        // octal, "0644"
	Uid           *int          // owner of the rendered file; nil keeps the agent's
	Gid           *int
	LeftDelim     string
	RightDelim    string
	Envvars       bool // env = true: the file is read into the task's environment
	Wait          *WaitConfig
	ErrMissingKey bool // error_on_missing_key
	Once          bool // render once, never re-render
}

// ChangeScript is a template's change_script block: a command run inside
// the task when the template is re-rendered (change_mode = "script").
type ChangeScript struct {
	Command          string
	Args             []string
	Timeout          time.Duration
	FailOnError      bool // the task is killed when the script fails
	RunOnFirstRender bool
}

// WaitConfig is a template's wait block: the least and most time to wait
// for the data to settle before rendering.
type WaitConfig struct {
	Min *time.Duration
	Max *time.Duration
}

// Template change modes.
const (
	TemplateChangeModeNoop    = "noop"
	TemplateChangeModeSignal  = "signal"
	TemplateChangeModeRestart = "restart"
	TemplateChangeModeScript  = "script"
)

// TemplateConsulFuncs are the template functions that read Consul; this
// cluster has no Consul integration, so a template calling one is refused
// at registration (embedded templates) or fails to render (source files).
var TemplateConsulFuncs = []string{
	"caLeaf", "caRoots", "connect", "datacenters", "exportedServices",
	"key", "keyExists", "keyOrDefault", "ls", "node", "nodes", "partitions",
	"peerings", "safeLs", "safeTree", "service", "services", "tree",
}

// TemplateVaultFuncs are the template functions that read Vault.
var TemplateVaultFuncs = []string{"pkiCert", "secret", "secrets"}

// TemplateFuncRefusal says why fn cannot be used in a template on this
// cluster, or "" when it can.
func TemplateFuncRefusal(fn string) string {
	switch {
	case slices.Contains(TemplateConsulFuncs, fn):
		return "this cluster has no Consul integration"
	case slices.Contains(TemplateVaultFuncs, fn):
		return "this cluster has no Vault integration"
	}
	return ""
}

// validate returns the problems of one template, in Nomad's wording.
func (t *Template) validate() []string {
	var p problems
	switch {
	case t.SourcePath == "" && t.EmbeddedTmpl == "":
		p.addf("Must specify a source path or have an embedded template")
	case t.SourcePath != "" && t.EmbeddedTmpl != "":
		p.addf("Cannot specify both a source path and an embedded template")
	}
	if t.DestPath == "" {
		p.addf("Must specify a destination for the template")
	} else if DestEscapesAllocDir(t.DestPath) {
		p.addf("destination escapes allocation directory")
	}
	switch t.ChangeMode {
	case TemplateChangeModeNoop, TemplateChangeModeRestart:
	case TemplateChangeModeSignal:
		if t.ChangeSignal == "" {
			p.addf("Must specify signal value when change mode is signal")
		} else if err := checkSignal(t.ChangeSignal); err != nil {
			p.addf("change_signal: %v", err)
		}
		if t.Envvars {
			p.addf("cannot use signals with env var templates")
		}
	case TemplateChangeModeScript:
		if t.ChangeScript == nil {
			p.addf("must specify change script configuration value when change mode is script")
		} else {
			if t.ChangeScript.Command == "" {
				p.addf("must specify script path value when change mode is script")
			}
			if t.ChangeScript.Timeout < 0 {
				p.addf("change_script timeout must not be negative, got %s", t.ChangeScript.Timeout)
			}
		}
	default:
		p.addf("Invalid change mode %q: must be one of noop, signal, script or restart", t.ChangeMode)
	}
	if t.Splay < 0 {
		p.addf("Must specify positive splay value")
	}
	if t.Perms != "" {
		if _, err := strconv.ParseUint(t.Perms, 8, 12); err != nil {
			p.addf("Failed to parse %q as octal: %v", t.Perms, err)
		}
	}
	if w := t.Wait; w != nil {
		if w.Min != nil && *w.Min < 0 || w.Max != nil && *w.Max < 0 {
			p.addf("wait: min and max must not be negative")
		}
		if w.Min != nil && w.Max != nil && *w.Max < *w.Min {
			p.addf("wait: min (%s) must not be greater than max (%s)", *w.Min, *w.Max)
		}
	}
	for _, fn := range t.refusedFuncs() {
		p.addf("function %q: %s", fn, TemplateFuncRefusal(fn))
	}
	return p
}

// DestEscapesAllocDir reports whether a template destination, taken
// relative to the task dir (<alloc>/<task>), leads out of the allocation
// directory as written. Interpolated NOMAD_*_DIR variables are relative
// paths on the client and cannot escape.
func DestEscapesAllocDir(dest string) bool {
	rel := filepath.Clean(filepath.Join("task", strings.TrimPrefix(dest, "/")))
	return rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// refusedFuncs lists the Consul and Vault functions the embedded template
// calls, in order of first use. A template that does not parse calls none
// here: it fails when the client renders it, as in Nomad.
func (t *Template) refusedFuncs() []string {
	if t.EmbeddedTmpl == "" {
		return nil
	}
	var out []string
	for _, fn := range TemplateFuncs(t.EmbeddedTmpl, t.LeftDelim, t.RightDelim) {
		if TemplateFuncRefusal(fn) != "" {
			out = append(out, fn)
		}
	}
	return out
}

// TemplateFuncs returns the names of the functions a template text calls,
// each once, in order of first use (the template's body first, then its
// define blocks by name); nil when it does not parse.
func TemplateFuncs(text, left, right string) []string {
	tree := parse.New("template")
	tree.Mode = parse.SkipFuncCheck
	set := map[string]*parse.Tree{}
	if _, err := tree.Parse(text, left, right, set); err != nil {
		return nil
	}
	var out []string
	names := make([]string, 0, len(set))
	for n := range set {
		if n != "template" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	names = append([]string{"template"}, names...)
	for _, n := range names {
		if tr := set[n]; tr != nil && tr.Root != nil {
			root := tr.Root
			walkTemplateNode(root, &out)
		}
	}
	return out
}

func walkTemplateNode(n parse.Node, out *[]string) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			walkTemplateNode(c, out)
		}
	case *parse.ActionNode:
		walkTemplateNode(n.Pipe, out)
	case *parse.IfNode:
		walkBranch(&n.BranchNode, out)
	case *parse.RangeNode:
		walkBranch(&n.BranchNode, out)
	case *parse.WithNode:
		walkBranch(&n.BranchNode, out)
	case *parse.TemplateNode:
		if n.Pipe != nil {
			walkTemplateNode(n.Pipe, out)
		}
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			walkTemplateNode(c, out)
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			walkTemplateNode(a, out)
		}
	case *parse.ChainNode:
		walkTemplateNode(n.Node, out)
	case *parse.IdentifierNode:
		if !slices.Contains(*out, n.Ident) {
			*out = append(*out, n.Ident)
		}
	}
}

func walkBranch(b *parse.BranchNode, out *[]string) {
	walkTemplateNode(b.Pipe, out)
	walkTemplateNode(b.List, out)
	if b.ElseList != nil {
		walkTemplateNode(b.ElseList, out)
	}
}

// validateTemplates adds the problems of the task's templates, each
// behind "Template N validation failed: " (N from 1, destination named).
func (t *Task) validateTemplates(p *problems) {
	for i, tmpl := range t.Templates {
		if tmpl == nil {
			p.addf("Template %d is null", i+1)
			continue
		}
		p.addAll(fmt.Sprintf("Template %d (destination %q) validation failed: ", i+1, tmpl.DestPath), tmpl.validate())
	}
}
