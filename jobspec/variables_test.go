package jobspec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// varJob declares variable "v" of the given type/default and exposes it (as
// JSON, for comparison) in job meta "out".
func varJob(decl string) string {
	return "variable \"v\" {\n" + decl + "\n}\njob \"j\" {\n  meta { out = jsonencode(var.v) }\n}\n"
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestVariables_Precedence(t *testing.T) {
	hclFile := writeFile(t, "a.vars", `v = "file-hcl"`)
	jsonFile := writeFile(t, "b.json", `{"v": "file-json"}`)
	env := []string{"PATH=/bin", "NOMAD_VAR_v=env"}
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"default", Options{}, `"default"`},
		{"env beats default", Options{Env: env}, `"env"`},
		{"var-file beats env", Options{Env: env, VarFiles: []string{hclFile}}, `"file-hcl"`},
		{"later var-file wins", Options{VarFiles: []string{hclFile, jsonFile}}, `"file-json"`},
		{"-var beats var-file", Options{Env: env, VarFiles: []string{hclFile}, ArgVars: []string{"v=flag"}}, `"flag"`},
		{"later -var wins", Options{ArgVars: []string{"v=one", "v=two"}}, `"two"`},
		{"-var value may contain =", Options{ArgVars: []string{"v=a=b"}}, `"a=b"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := mustParse(t, varJob(`type = string
default = "default"`), tc.opts)
			require.Equal(t, tc.want, job.Meta["out"])
		})
	}
}

func TestVariables_TypeConversion(t *testing.T) {
	cases := []struct {
		name string
		decl string
		opts Options
		want string
	}{
		{"number from -var", "type = number", Options{ArgVars: []string{"v=42"}}, `42`},
		{"bool from env", "type = bool", Options{Env: []string{"NOMAD_VAR_v=true"}}, `true`},
		{"list from -var", "type = list(string)", Options{ArgVars: []string{`v=["a", "b"]`}}, `["a","b"]`},
		{"map from env", "type = map(number)", Options{Env: []string{`NOMAD_VAR_v={x = 1}`}}, `{"x":1}`},
		{"object default", "type = object({a = string})\ndefault = { a = \"z\" }", Options{}, `{"a":"z"}`},
		{"untyped -var stays string", "", Options{ArgVars: []string{"v=7"}}, `"7"`},
		{"untyped default keeps type", "default = [1, 2]", Options{}, `[1,2]`},
		{"number default converts to string type", "type = string\ndefault = 5", Options{}, `"5"`},
		{"json var-file list", "type = list(number)", Options{VarFiles: []string{"VARFILE"}}, `[1,2,3]`},
		{"null default", "default = null", Options{}, `null`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i, f := range tc.opts.VarFiles {
				if f == "VARFILE" {
					tc.opts.VarFiles[i] = writeFile(t, "v.json", `{"v": [1, 2, 3]}`)
				}
			}
			job := mustParse(t, varJob(tc.decl), tc.opts)
			require.Equal(t, tc.want, job.Meta["out"])
		})
	}
}

func TestVariables_UsedInJob(t *testing.T) {
	job := mustParse(t, `
variable "count" {
  type    = number
  default = 3
}
variable "dcs" {
  type = list(string)
}
job "j" {
  datacenters = var.dcs
  group "g" {
    count = var.count
  }
}`, Options{ArgVars: []string{`dcs=["dc1"]`}})
	require.Equal(t, []string{"dc1"}, job.Datacenters)
	require.Equal(t, 3, *job.TaskGroups[0].Count)
}

func TestVariables_Strict(t *testing.T) {
	src := `job "j" {}`
	varFile := writeFile(t, "x.hcl", `undeclared = 1`)
	// Non-strict: undeclared values are ignored.
	mustParse(t, src, Options{ArgVars: []string{"undeclared=1"}, VarFiles: []string{varFile}})
	// Env is never strict.
	mustParse(t, src, Options{Strict: true, Env: []string{"NOMAD_VAR_undeclared=1"}})

	_, err := parseSrc(t, src, Options{Strict: true, ArgVars: []string{"undeclared=1"}})
	require.ErrorContains(t, err, `Undefined -var variable; A value was given for "undeclared"`)
	_, err = parseSrc(t, src, Options{Strict: true, VarFiles: []string{varFile}})
	require.ErrorContains(t, err, "x.hcl:1,1-11: Undefined variable in variable file")
}

func TestVariables_Errors(t *testing.T) {
	cases := []struct {
		name string
		src  string
		opts Options
		want string
	}{
		{"missing required", varJob("type = string"), Options{},
			jobFile + `:1,1-13: Missing value for required variable; Variable "v" has no default`},
		{"bad number from -var", varJob("type = number"), Options{ArgVars: []string{"v=abc"}},
			`Invalid value for variable "v" from -var; a number is required`},
		{"bad env value", varJob("type = bool"), Options{Env: []string{"NOMAD_VAR_v=maybe"}},
			`Invalid value for variable "v" from NOMAD_VAR_v`},
		{"unparsable list", varJob("type = list(string)"), Options{ArgVars: []string{"v=[1,"}},
			`Invalid value for variable "v" from -var; cannot parse`},
		{"flag without =", varJob("default = 1"), Options{ArgVars: []string{"v"}},
			`Invalid -var flag; "v" is not of the form name=value.`},
		{"bad default", varJob("type = number\ndefault = \"x\""), Options{},
			jobFile + `:3,11-14: Invalid default for variable "v"`},
		{"bad type expression", varJob("type = strang"), Options{},
			jobFile + `:2,8-14: Invalid type specification`},
		{"duplicate variable", "variable \"a\" {}\nvariable \"a\" {}\njob \"j\" {}", Options{ArgVars: []string{"a=1"}},
			jobFile + `:2,1-13: Duplicate variable`},
		{"unknown variable attribute", varJob("sensitive = true"), Options{},
			`Unsupported argument; An argument named "sensitive" is not expected here.`},
		{"missing var file", `job "j" {}`, Options{VarFiles: []string{"/nonexistent/vars.hcl"}},
			"Failed to read variable file"},
		{"variable referencing var", varJob("default = var.other"), Options{},
			jobFile + `:2,11-14: Variables not allowed`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseSrc(t, tc.src, tc.opts)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestVariables_Validation(t *testing.T) {
	src := varJob(`type = number
default = 1
validation {
  condition     = var.v > 0
  error_message = "v must be positive"
}`)
	mustParse(t, src)
	_, err := parseSrc(t, src, Options{ArgVars: []string{"v=-1"}})
	require.ErrorContains(t, err, jobFile+`:5,19-28: Invalid value for variable "v"; v must be positive`)

	_, err = parseSrc(t, varJob("default = 1\nvalidation {\n condition = \"x\"\n error_message = \"m\"\n}"))
	require.ErrorContains(t, err, "Invalid validation condition")
}

func TestLocals(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want map[string]string
	}{
		{"forward references across blocks", `
variable "env" { default = "prod" }
locals {
  full = "${local.prefix}-${local.suffix}"
  suffix = upper(var.env)
}
locals {
  prefix = "app"
}
job "j" {
  meta {
    full = local.full
  }
}`, map[string]string{"full": "app-PROD"}},
		{"chain", `
locals {
  c = local.b + 1
  b = local.a * 2
  a = 5
}
job "j" {
  meta = { c = local.c }
}`, map[string]string{"c": "11"}},
		{"runtime interpolation in a local", `
locals {
  dir = "${NOMAD_ALLOC_DIR}/data"
}
job "j" {
  meta = { dir = local.dir }
}`, map[string]string{"dir": "${NOMAD_ALLOC_DIR}/data"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, mustParse(t, tc.src).Meta)
		})
	}
}

func TestLocals_Errors(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"cycle", "locals {\n  a = local.b\n  b = local.a\n}\njob \"j\" {}",
			jobFile + ":2,3-4: Circular reference in locals; These locals depend on each other: a, b."},
		{"undefined local in locals", "locals {\n  a = local.zz\n}\njob \"j\" {}",
			jobFile + `:2,7-15: Undefined local; No local value named "zz"`},
		{"duplicate local", "locals {\n  a = 1\n}\nlocals {\n  a = 2\n}\njob \"j\" {}",
			jobFile + `:5,3-4: Duplicate local value`},
		{"block inside locals", "locals {\n  x {}\n}\njob \"j\" {}",
			"Unexpected \"x\" block"},
		{"undefined var in locals", "locals {\n  a = var.nope\n}\njob \"j\" {}",
			jobFile + `:2,7-15: Undefined variable; No variable named "nope" is declared`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseSrc(t, tc.src)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestVariables_ContentsAndNoFS: variable files given by content apply
// after the VarFiles and before -var; with NoFS, file() and fileexists()
// fail instead of reading the parser's file system.
func TestVariables_ContentsAndNoFS(t *testing.T) {
	src := []byte(varJob(`default = "def"`))
	file := writeFile(t, "a.vars", `v = "file"`)
	job, err := Parse("j.hcl", src, Options{VarFiles: []string{file}, VarContents: []string{`v = "content"`}})
	require.NoError(t, err)
	require.Equal(t, `"content"`, job.Meta["out"])
	job, err = Parse("j.hcl", src, Options{VarContents: []string{`v = "content"`}, ArgVars: []string{"v=arg"}})
	require.NoError(t, err)
	require.Equal(t, `"arg"`, job.Meta["out"])
	_, err = Parse("j.hcl", src, Options{VarContents: []string{`v = `}})
	require.ErrorContains(t, err, "<variables 1>")

	secret := writeFile(t, "secret.txt", "s3cret")
	fsJob := []byte("job \"j\" {\n  meta {\n    a = file(\"" + secret + "\")\n  }\n}\n")
	job, err = Parse("j.hcl", fsJob, Options{})
	require.NoError(t, err)
	require.Equal(t, "s3cret", job.Meta["a"])
	_, err = Parse("j.hcl", fsJob, Options{NoFS: true})
	require.ErrorContains(t, err, "file() is disabled")
	existsJob := []byte("job \"j\" {\n  meta {\n    a = fileexists(\"" + secret + "\")\n  }\n}\n")
	_, err = Parse("j.hcl", existsJob, Options{NoFS: true})
	require.ErrorContains(t, err, "fileexists() is disabled")
}
