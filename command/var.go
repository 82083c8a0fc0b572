package command

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/hashicorp/nomad/api"
)

// varCommands is the `var` subtree: Nomad variables, as `nomad var` has it.
func varCommands() *command {
	return &command{name: "var", synopsis: "Interact with variables", subs: []*command{
		{name: "get", synopsis: "Read a variable", run: varGet},
		{name: "init", synopsis: "Create an example variable specification file", run: varInit},
		{name: "list", synopsis: "List variables", run: varList},
		{name: "lock", synopsis: "Hold a lock on a variable while running a command", run: varLock},
		{name: "purge", synopsis: "Purge a variable", run: varPurge},
		{name: "put", synopsis: "Create or update a variable", run: varPut},
	}}
}

// varOutput renders v in format out (json, hcl, table, go-template with
// tmpl, none).
func (m *Meta) varOutput(v *api.Variable, out, tmpl string) int {
	switch out {
	case "none":
		return 0
	case "json":
		m.outf("%s", v.AsPrettyJSON())
	case "hcl":
		m.outf("%s", variableHCL(v))
	case "table":
		rows := []string{
			"Namespace|" + v.Namespace, "Path|" + v.Path,
			"Create Time|" + formatTime(time.Unix(0, v.CreateTime)),
			"Check Index|" + fmt.Sprint(v.ModifyIndex),
		}
		if v.Lock != nil {
			rows = append(rows, "Lock ID|"+v.Lock.ID, "Lock TTL|"+v.Lock.TTL, "Lock Delay|"+v.Lock.LockDelay)
		}
		m.outf("%s", formatKV(rows))
		if len(v.Items) > 0 {
			m.outf("\nItems")
			keys := make([]string, 0, len(v.Items))
			for k := range v.Items {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			items := make([]string, 0, len(keys))
			for _, k := range keys {
				items = append(items, k+"|"+v.Items[k])
			}
			m.outf("%s", formatKV(items))
		}
	case "go-template":
		return m.renderTemplate(tmpl, v)
	default:
		m.errorf("Invalid output format %q: must be one of go-template, hcl, json, none or table", out)
		return 1
	}
	return 0
}

// renderTemplate executes a -template against data.
func (m *Meta) renderTemplate(tmpl string, data any) int {
	if tmpl == "" {
		m.errorf("A template must be supplied using '-template' when using go-template formatting")
		return 1
	}
	t, err := template.New("out").Parse(tmpl)
	if err != nil {
		m.errorf("Error parsing template: %s", err)
		return 1
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		m.errorf("Error executing template: %s", err)
		return 1
	}
	m.outf("%s", b.String())
	return 0
}

// variableHCL renders v as a variable specification in HCL.
func variableHCL(v *api.Variable) string {
	var b strings.Builder
	fmt.Fprintf(&b, "namespace = %q\npath      = %q\n\nitems {\n", v.Namespace, v.Path)
	keys := make([]string, 0, len(v.Items))
	for k := range v.Items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s = %q\n", k, v.Items[k])
	}
	b.WriteString("}")
	return b.String()
}

// defaultOut is "table" on a terminal, else "json" (Nomad's default of
// var get); put defaults to "none" on a terminal.
func (m *Meta) defaultOut(terminal string) string {
	if isTerminal(m.Stdout) {
		return terminal
	}
	return "json"
}

func varGet(m *Meta, args []string) int {
	const help = `Usage: drover var get [options] <path>

  Read a variable. -item prints the value of one item only.

Get Options:

  -item <key>          Print only the value of this item.
  -out <format>        go-template, hcl, json, none or table (default: table
                       on a terminal, else json).
  -template <tmpl>     Template for -out=go-template.`
	fs := m.FlagSet("var get")
	var item, out, tmpl string
	fs.StringVar(&item, "item", "", "")
	fs.StringVar(&out, "out", "", "")
	fs.StringVar(&tmpl, "template", "", "")
	c, path, code, ok := m.oneArg(fs, args, help, "<path>")
	if !ok {
		return code
	}
	if out == "" {
		out = m.defaultOut("table")
		if tmpl != "" {
			out = "go-template"
		}
	}
	v, _, err := c.Variables().Read(path, nil)
	if errors.Is(err, api.ErrVariablePathNotFound) {
		m.errorf("Variable not found")
		return 1
	}
	if err != nil {
		m.errorf("Error retrieving variable: %s", err)
		return 1
	}
	if item != "" {
		val, ok := v.Items[item]
		if !ok {
			m.errorf("Variable does not contain %q item", item)
			return 1
		}
		fmt.Fprint(m.Stdout, val)
		return 0
	}
	return m.varOutput(v, out, tmpl)
}

func varList(m *Meta, args []string) int {
	const help = `Usage: drover var list [options] [<prefix>]

  List the variables the token may list, optionally under a path prefix.

List Options:

  -per-page <n>        Variables per page.
  -page-token <tok>    Where the page starts (from a previous page).
  -filter <expr>       Filter expression over the variables' metadata.
  -out <format>        go-template, json, table or terse (default: table on
                       a terminal, else json).
  -template <tmpl>     Template for -out=go-template.`
	fs := m.FlagSet("var list")
	var perPage int
	var token, filter, out, tmpl string
	fs.IntVar(&perPage, "per-page", 0, "")
	fs.StringVar(&token, "page-token", "", "")
	fs.StringVar(&filter, "filter", "", "")
	fs.StringVar(&out, "out", "", "")
	fs.StringVar(&tmpl, "template", "", "")
	if code, ok := m.parse(fs, args, help); !ok {
		return code
	}
	if fs.NArg() > 1 {
		return m.usageError("This command takes flags and either no arguments or one: <prefix>", help)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	if out == "" {
		out = m.defaultOut("table")
		if tmpl != "" {
			out = "go-template"
		}
	}
	q := &api.QueryOptions{Prefix: fs.Arg(0), PerPage: int32(perPage), NextToken: token, Filter: filter}
	vars, qm, err := c.Variables().List(q)
	if err != nil {
		m.errorf("Error retrieving vars: %s", err)
		return 1
	}
	switch out {
	case "json":
		if qm.NextToken != "" {
			return m.printJSON(struct {
				Data      []*api.VariableMetadata
				QueryMeta *api.QueryMeta
			}{vars, qm})
		}
		return m.printJSON(vars)
	case "terse":
		for _, v := range vars {
			m.outf("%s", v.Path)
		}
	case "table":
		if len(vars) == 0 {
			m.outf("No matching variables found")
			return 0
		}
		rows := []string{"Namespace|Path|Last Updated"}
		for _, v := range vars {
			rows = append(rows, v.Namespace+"|"+v.Path+"|"+formatTime(time.Unix(0, v.ModifyTime)))
		}
		m.outf("%s", formatList(rows))
	case "go-template":
		return m.renderTemplate(tmpl, vars)
	default:
		m.errorf("Invalid output format %q: must be one of go-template, json, table or terse", out)
		return 1
	}
	if qm.NextToken != "" && out == "table" {
		m.outf("\nNext page token: %s", qm.NextToken)
	}
	return 0
}

func varPurge(m *Meta, args []string) int {
	const help = `Usage: drover var purge [options] <path>

  Permanently delete a variable.

Purge Options:

  -check-index <n>     Delete only when the variable's modify index is n.`
	fs := m.FlagSet("var purge")
	checkIndex := optionalUint{}
	fs.Var(&checkIndex, "check-index", "")
	c, path, code, ok := m.oneArg(fs, args, help, "<path>")
	if !ok {
		return code
	}
	var err error
	if checkIndex.set {
		_, err = c.Variables().CheckedDelete(path, checkIndex.v, nil)
	} else {
		_, err = c.Variables().Delete(path, nil)
	}
	var cas api.ErrCASConflict
	if errors.As(err, &cas) {
		m.errorf("%s", casConflictMessage(checkIndex.v, cas.Conflict.ModifyIndex))
		return 1
	}
	if err != nil {
		m.errorf("Error purging variable: %s", err)
		return 1
	}
	m.outf("Successfully purged variable %q!", path)
	return 0
}

// casConflictMessage is the explanation of a check-and-set conflict.
func casConflictMessage(want, have uint64) string {
	return fmt.Sprintf("Check-and-Set conflict\n\n    Your provided check-index (%d) does not match the\n    server-side index (%d).\n\n    If you are sure you want to perform this operation, add the -force or\n    -check-index=%d flag before the positional arguments.", want, have, have)
}

// optionalUint is a uint64 flag that knows whether it was given.
type optionalUint struct {
	v   uint64
	set bool
}

func (o *optionalUint) String() string { return fmt.Sprint(o.v) }
func (o *optionalUint) Set(s string) error {
	_, err := fmt.Sscan(s, &o.v)
	o.set = err == nil
	return err
}

func varInit(m *Meta, args []string) int {
	const help = `Usage: drover var init [options] [<filename>]

  Write an example variable specification (spec.nv.hcl, or spec.nv.json
  with -out=json).

Init Options:

  -out <format>        hcl or json (default: hcl).
  -quiet               Print no success message.`
	fs := m.FlagSet("var init")
	var out string
	var quiet bool
	fs.StringVar(&out, "out", "hcl", "")
	fs.BoolVar(&quiet, "quiet", false, "")
	if code, ok := m.parse(fs, args, help); !ok {
		return code
	}
	if fs.NArg() > 1 {
		return m.usageError("This command takes no arguments or one: <filename>", help)
	}
	example := &api.Variable{Path: "path/to/variable", Items: api.VariableItems{"key1": "value1", "key2": "value2"}}
	var name, body string
	switch out {
	case "hcl":
		name, body = "spec.nv.hcl", "# A Drover (Nomad) variable specification.\n"+variableHCL(example)+"\n"
	case "json":
		name, body = "spec.nv.json", `{
  "Path": "path/to/variable",
  "Items": {
    "key1": "value1",
    "key2": "value2"
  }
}
`
	default:
		m.errorf("Invalid output format %q: must be hcl or json", out)
		return 1
	}
	if fs.NArg() == 1 {
		name = fs.Arg(0)
	}
	if _, err := os.Stat(name); err == nil {
		m.errorf("Variable specification %q already exists", name)
		return 1
	} else if !errors.Is(err, os.ErrNotExist) {
		m.errorf("Failed to stat %q: %v", name, err)
		return 1
	}
	if err := os.WriteFile(name, []byte(body), 0o660); err != nil {
		m.errorf("Failed to write %q: %v", name, err)
		return 1
	}
	if !quiet {
		m.outf("Example variable specification written to %s", name)
	}
	return 0
}
