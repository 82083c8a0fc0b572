package structs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func okTemplate() *Template {
	return &Template{
		EmbeddedTmpl: `{{ with nomadVar "nomad/jobs/web" }}{{ .k }}{{ end }}`,
		DestPath:     "local/out", ChangeMode: "restart", Splay: 5 * time.Second,
		Perms: "0644", LeftDelim: "{{", RightDelim: "}}",
	}
}

func TestTemplateValidate(t *testing.T) {
	d := func(v time.Duration) *time.Duration { return &v }
	cases := []struct {
		name   string
		mutate func(*Template)
		want   []string
	}{
		{"valid", func(*Template) {}, nil},
		{"valid source", func(tm *Template) { tm.EmbeddedTmpl, tm.SourcePath = "", "local/in.tpl" }, nil},
		{"alloc dir destination", func(tm *Template) { tm.DestPath = "../alloc/shared.conf" }, nil},
		{"interpolated destination", func(tm *Template) { tm.DestPath = "${NOMAD_SECRETS_DIR}/app.env" }, nil},
		{"absolute destination stays in the task dir", func(tm *Template) { tm.DestPath = "/etc/app.conf" }, nil},
		{"no source", func(tm *Template) { tm.EmbeddedTmpl = "" },
			[]string{"Must specify a source path or have an embedded template"}},
		{"both sources", func(tm *Template) { tm.SourcePath = "local/x" },
			[]string{"Cannot specify both a source path and an embedded template"}},
		{"no destination", func(tm *Template) { tm.DestPath = "" },
			[]string{"Must specify a destination for the template"}},
		{"escaping destination", func(tm *Template) { tm.DestPath = "../../etc/passwd" },
			[]string{"destination escapes allocation directory"}},
		{"bad change mode", func(tm *Template) { tm.ChangeMode = "reload" },
			[]string{`Invalid change mode "reload": must be one of noop, signal, script or restart`}},
		{"signal without signal", func(tm *Template) { tm.ChangeMode = "signal" },
			[]string{"Must specify signal value when change mode is signal"}},
		{"signal env template", func(tm *Template) { tm.ChangeMode, tm.ChangeSignal, tm.Envvars = "signal", "SIGHUP", true },
			[]string{"cannot use signals with env var templates"}},
		{"script without block", func(tm *Template) { tm.ChangeMode = "script" },
			[]string{"must specify change script configuration value when change mode is script"}},
		{"script without command", func(tm *Template) { tm.ChangeMode, tm.ChangeScript = "script", &ChangeScript{} },
			[]string{"must specify script path value when change mode is script"}},
		{"negative splay", func(tm *Template) { tm.Splay = -time.Second },
			[]string{"Must specify positive splay value"}},
		{"bad perms", func(tm *Template) { tm.Perms = "0abc" },
			[]string{`Failed to parse "0abc" as octal: strconv.ParseUint: parsing "0abc": invalid syntax`}},
		{"wait min over max", func(tm *Template) { tm.Wait = &WaitConfig{Min: d(time.Minute), Max: d(time.Second)} },
			[]string{"wait: min (1m0s) must not be greater than max (1s)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tm := okTemplate()
			tc.mutate(tm)
			assert.Equal(t, tc.want, []string(tm.validate()))
		})
	}
}

// TestTemplateConsulAndVaultFunctionsRefused: a template calling a
// function of an integration this cluster lacks is refused naming the
// function, wherever the call is (pipelines, branches, define blocks, with
// other delimiters); Nomad's functions and helpers are not.
func TestTemplateConsulAndVaultFunctionsRefused(t *testing.T) {
	cases := []struct {
		text, left, right string
		want              []string
	}{
		{text: `{{ key "a" }}`, want: []string{`function "key": this cluster has no Consul integration`}},
		{text: `{{ range service "web" }}{{ .Address }}{{ end }}`, want: []string{`function "service": this cluster has no Consul integration`}},
		{text: `{{ with secret "db/creds" }}{{ .Data.password }}{{ end }}`, want: []string{`function "secret": this cluster has no Vault integration`}},
		{text: `{{ define "x" }}{{ keyOrDefault "a" "b" | toUpper }}{{ end }}{{ if true }}{{ else }}{{ pkiCert "p" }}{{ end }}`,
			want: []string{`function "pkiCert": this cluster has no Vault integration`, `function "keyOrDefault": this cluster has no Consul integration`}},
		{text: `[[ tree "a" ]] {{ key "not a call" }}`, left: "[[", right: "]]",
			want: []string{`function "tree": this cluster has no Consul integration`}},
		{text: `{{ range nomadService "web" }}{{ .Address }}{{ end }}{{ nomadVarExists "x" }}{{ env "A" | toJSON }}`},
		{text: `{{ unclosed`}, // does not parse: the client says so when it renders
	}
	for _, tc := range cases {
		tm := okTemplate()
		tm.EmbeddedTmpl = tc.text
		if tc.left != "" {
			tm.LeftDelim, tm.RightDelim = tc.left, tc.right
		}
		assert.Equal(t, tc.want, []string(tm.validate()), tc.text)
	}
}

// TestTemplateProblemsNameTheTemplate: through Job.Validate, each problem
// names the task and the template (its number and destination).
func TestTemplateProblemsNameTheTemplate(t *testing.T) {
	j := testJob()
	tm := okTemplate()
	tm.EmbeddedTmpl = `{{ key "flags" }}`
	tm.DestPath = "local/flags.json"
	j.TaskGroups[0].Tasks[0].Templates = []*Template{okTemplate(), tm}
	err := j.Validate()
	require.Error(t, err)
	var verr *ValidationError
	require.ErrorAs(t, err, &verr)
	assert.Contains(t, verr.Problems,
		`Task group "web" validation failed: task "server": Template 2 (destination "local/flags.json") validation failed: function "key": this cluster has no Consul integration`)
}

func TestTemplateFuncs(t *testing.T) {
	assert.Equal(t, []string{"nomadVar", "toUpper", "env"},
		TemplateFuncs(`{{ with nomadVar "a" }}{{ .x | toUpper }}{{ end }}{{ env "A" }}{{ env "B" }}`, "{{", "}}"))
	assert.Nil(t, TemplateFuncs(`{{ if }}`, "{{", "}}"))
}
