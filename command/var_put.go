package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/nomad/api"
	"github.com/zclconf/go-cty/cty"
)

func varPut(m *Meta, args []string) int {
	const help = `Usage: drover var put [options] <path> [<@spec file>] [<key>=<value>]...
       drover var put [options] <@spec file | -> [<key>=<value>]...

  Create or update a variable. Items come from a specification (a file
  with @, or stdin with "-" and -in) and key=value arguments, which win; a
  value may be @file or "-" (stdin), read as is.

Put Options:

  -check-index <n>     Write only when the variable's modify index is n (0:
                       only when it does not exist). A specification's
                       ModifyIndex is the default check index.
  -force               Write whatever the stored variable's index.
  -in <format>         hcl or json: the format of a specification on stdin
                       or with an unknown extension (default: json).
  -out <format>        go-template, hcl, json, none or table (default: none
                       on a terminal, else json).
  -template <tmpl>     Template for -out=go-template.
  -verbose             Report what is read on stderr.`
	fs := m.FlagSet("var put")
	checkIndex := optionalUint{}
	var force, verbose bool
	var in, out, tmpl string
	fs.Var(&checkIndex, "check-index", "")
	fs.BoolVar(&force, "force", false, "")
	fs.StringVar(&in, "in", "json", "")
	fs.StringVar(&out, "out", "", "")
	fs.StringVar(&tmpl, "template", "", "")
	fs.BoolVar(&verbose, "verbose", false, "")
	if code, ok := m.parse(fs, args, help); !ok {
		return code
	}
	if force && checkIndex.set {
		return m.usageError("The -force and -check-index flags can not be used together", help)
	}
	if in != "json" && in != "hcl" {
		return m.usageError(fmt.Sprintf("Invalid -in %q: must be hcl or json", in), help)
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return m.usageError("Not enough arguments (expected >1, got 0)", help)
	}
	v := &api.Variable{Items: api.VariableItems{}}
	first := rest[0]
	rest = rest[1:]
	specArg := ""
	switch {
	case first == "-" || strings.HasPrefix(first, "@"):
		specArg = first
	default:
		v.Path = first
		if len(rest) > 0 && strings.HasPrefix(rest[0], "@") && !strings.Contains(rest[0], "=") {
			specArg, rest = rest[0], rest[1:]
		}
	}
	if specArg != "" {
		spec, err := m.readVariableSpec(specArg, in, verbose)
		if err != nil {
			m.errorf("Error parsing variable specification: %s", err)
			return 1
		}
		if v.Path == "" {
			v.Path = spec.Path
		}
		if spec.Namespace != "" && m.namespace == "" {
			v.Namespace = spec.Namespace
		}
		v.ModifyIndex = spec.ModifyIndex
		for k, val := range spec.Items {
			v.Items[k] = val
		}
	}
	if v.Path == "" {
		m.errorf("Missing variable path")
		return 1
	}
	for _, kv := range rest {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			m.errorf("Error parsing key=value argument %q", kv)
			return 1
		}
		val, err := m.itemValue(val)
		if err != nil {
			m.errorf("Error reading value of %q: %s", k, err)
			return 1
		}
		v.Items[k] = val
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	if out == "" {
		out = m.defaultOut("none")
		if tmpl != "" {
			out = "go-template"
		}
	}
	var written *api.Variable
	var err error
	want := v.ModifyIndex
	if checkIndex.set {
		want = checkIndex.v
	}
	switch {
	case force || (!checkIndex.set && v.ModifyIndex == 0):
		written, _, err = c.Variables().Update(v, nil)
	default:
		v.ModifyIndex = want
		written, _, err = c.Variables().CheckedUpdate(v, nil)
	}
	var cas api.ErrCASConflict
	if errors.As(err, &cas) {
		m.errorf("%s", casConflictMessage(want, cas.Conflict.ModifyIndex))
		return 1
	}
	if err != nil {
		m.errorf("Error creating variable: %s", err)
		return 1
	}
	if out == "none" || out == "table" {
		verb := "updated"
		if written.CreateIndex == written.ModifyIndex {
			verb = "created"
		}
		m.outf("Successfully %s variable %q!", verb, written.Path)
	}
	return m.varOutput(written, out, tmpl)
}

// itemValue resolves a key=value argument's value: @file is the file's
// contents, "-" all of stdin, anything else itself.
func (m *Meta) itemValue(val string) (string, error) {
	switch {
	case val == "-":
		b, err := io.ReadAll(m.Stdin)
		return string(b), err
	case strings.HasPrefix(val, "@"):
		b, err := os.ReadFile(val[1:])
		return string(b), err
	}
	return val, nil
}

// readVariableSpec reads a specification from "@file" or "-" (stdin), in
// the format of the file's extension, else in.
func (m *Meta) readVariableSpec(arg, in string, verbose bool) (*api.Variable, error) {
	var data []byte
	var err error
	name := "stdin"
	if arg == "-" {
		if verbose {
			m.errorf("Reading whole %s variable specification from stdin", strings.ToUpper(in))
		}
		data, err = io.ReadAll(m.Stdin)
	} else {
		name = arg[1:]
		switch filepath.Ext(name) {
		case ".json":
			in = "json"
		case ".hcl":
			in = "hcl"
		}
		if verbose {
			m.errorf("Reading whole %s variable specification from %q", strings.ToUpper(in), name)
		}
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, err
	}
	if in == "json" {
		var v api.Variable
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &v, nil
	}
	return parseVariableHCL(name, data)
}

// parseVariableHCL reads `path`, `namespace` and an `items {}` block.
func parseVariableHCL(name string, data []byte) (*api.Variable, error) {
	file, diags := hclsyntax.ParseConfig(data, name, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	content, diags := file.Body.Content(&hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "path"}, {Name: "namespace"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "items"}},
	})
	if diags.HasErrors() {
		return nil, diags
	}
	v := &api.Variable{Items: api.VariableItems{}}
	str := func(a *hcl.Attribute) (string, error) {
		val, d := a.Expr.Value(nil)
		if d.HasErrors() {
			return "", d
		}
		if val.Type() != cty.String {
			return "", fmt.Errorf("%s: %s must be a string", name, a.Name)
		}
		return val.AsString(), nil
	}
	for attrName, dst := range map[string]*string{"path": &v.Path, "namespace": &v.Namespace} {
		if a := content.Attributes[attrName]; a != nil {
			s, err := str(a)
			if err != nil {
				return nil, err
			}
			*dst = s
		}
	}
	for _, b := range content.Blocks {
		attrs, d := b.Body.JustAttributes()
		if d.HasErrors() {
			return nil, d
		}
		for k, a := range attrs {
			s, err := str(a)
			if err != nil {
				return nil, err
			}
			v.Items[k] = s
		}
	}
	return v, nil
}

func varLock(m *Meta, args []string) int {
	const help = `Usage: drover var lock [options] <path> [<@spec file>] <child command> [<args>]...

  Acquire a lock on the variable at path (creating it if needed), run the
  child command while holding it, renewing the lease, and release it when
  the child exits. The child is stopped if the lock is lost. The exit code
  is the child's.

Lock Options:

  -ttl <duration>      The lock's TTL (default: 15s).
  -delay <duration>    The lock delay (default: 15s).
  -max-retry <n>       Retries of each lock call (default: 5).
  -shell               Run the child command through "sh -c".
  -verbose             Report lock progress on stderr.`
	fs := m.FlagSet("var lock")
	var ttl, delay time.Duration
	var maxRetry int64
	var shell, verbose bool
	fs.DurationVar(&ttl, "ttl", api.DefaultLockTTL, "")
	fs.DurationVar(&delay, "delay", api.DefaultLockDelay, "")
	fs.Int64Var(&maxRetry, "max-retry", 5, "")
	fs.BoolVar(&shell, "shell", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	if code, ok := m.parse(fs, args, help); !ok {
		return code
	}
	rest := fs.Args()
	if len(rest) < 2 {
		return m.usageError("This command takes at least two arguments: <path> and <child command>", help)
	}
	v := api.Variable{Path: rest[0], Items: api.VariableItems{}}
	rest = rest[1:]
	if strings.HasPrefix(rest[0], "@") {
		spec, err := m.readVariableSpec(rest[0], "json", verbose)
		if err != nil {
			m.errorf("Error parsing variable specification: %s", err)
			return 1
		}
		v.Items = spec.Items
		rest = rest[1:]
		if len(rest) == 0 {
			return m.usageError("Missing the child command", help)
		}
	}
	v.Lock = &api.VariableLock{TTL: ttl.String(), LockDelay: delay.String()}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	locks, err := c.Locks(api.WriteOptions{}, v, api.LocksOptionWithMaxRetries(maxRetry))
	if err != nil {
		m.errorf("Error creating the lock handler: %s", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	exitCode := 0
	child := func(ctx context.Context) error {
		if verbose {
			m.errorf("Lock acquired on %q; running the child", v.Path)
		}
		cmdArgs := rest
		if shell {
			cmdArgs = []string{"sh", "-c", strings.Join(rest, " ")}
		}
		cmd := exec.CommandContext(ctx, cmdArgs[0], cmdArgs[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = m.Stdin, m.Stdout, m.Stderr
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			exitCode = ee.ExitCode()
			return nil
		case err != nil:
			exitCode = 1
			return err
		}
		return nil
	}
	if err := c.NewLockLeaser(locks).Start(ctx, child); err != nil {
		m.errorf("Error running the child under the lock: %s", err)
		if exitCode == 0 {
			exitCode = 1
		}
	}
	return exitCode
}
