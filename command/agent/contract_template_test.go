package agent

import (
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// TestContractTemplates: a template block registers and reads back with
// every field (Nomad's defaults filled in); one calling a Consul or Vault
// function is a 400 naming the template and the function, from register
// and validate alike; vault_grace is refused, its default (0) is not.
func TestContractTemplates(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client

	job := testJob("tmpl")
	task := job.TaskGroups[0].Tasks[0]
	task.Templates = []*api.Template{{
		EmbeddedTmpl: new(`{{ with nomadVar "nomad/jobs/tmpl" }}{{ .a }}{{ end }}`),
		DestPath:     new("${NOMAD_SECRETS_DIR}/a.env"),
		Envvars:      new(true),
		ChangeMode:   new("script"),
		ChangeScript: &api.ChangeScript{Command: new("/bin/reload"), Args: []string{"-v"}},
		Uid:          new(1000),
		Wait:         &api.WaitConfig{Min: new(time.Second), Max: new(time.Minute)},
		VaultGrace:   new(time.Duration(0)),
	}}
	_, _, err := c.Jobs().Register(job, nil)
	require.NoError(t, err)
	got, _, err := c.Jobs().Info("tmpl", nil)
	require.NoError(t, err)
	require.Len(t, got.TaskGroups[0].Tasks[0].Templates, 1)
	tm := got.TaskGroups[0].Tasks[0].Templates[0]
	require.Equal(t, "${NOMAD_SECRETS_DIR}/a.env", *tm.DestPath)
	require.Equal(t, "script", *tm.ChangeMode)
	require.Equal(t, "/bin/reload", *tm.ChangeScript.Command)
	require.Equal(t, []string{"-v"}, tm.ChangeScript.Args)
	require.Equal(t, 5*time.Second, *tm.ChangeScript.Timeout, "api default")
	require.Equal(t, 5*time.Second, *tm.Splay, "api default")
	require.Equal(t, "0644", *tm.Perms)
	require.Equal(t, 1000, *tm.Uid)
	require.Equal(t, time.Minute, *tm.Wait.Max)
	require.True(t, *tm.Envvars)

	bad := testJob("consul-tmpl")
	bad.TaskGroups[0].Tasks[0].Templates = []*api.Template{
		{EmbeddedTmpl: new(`{{ key "flags" }}`), DestPath: new("local/flags")},
		{EmbeddedTmpl: new(`{{ with secret "db" }}{{ end }}`), DestPath: new("../../x")},
	}
	const prefix = `Task group "web" validation failed: task "server": `
	_, _, err = c.Jobs().Register(bad, nil)
	requireStatus(t, err, http.StatusBadRequest, prefix+`Template 1 (destination "local/flags") validation failed: function "key": this cluster has no Consul integration`)
	requireStatus(t, err, http.StatusBadRequest, prefix+`Template 2 (destination "../../x") validation failed: destination escapes allocation directory`)
	requireStatus(t, err, http.StatusBadRequest, prefix+`Template 2 (destination "../../x") validation failed: function "secret": this cluster has no Vault integration`)
	val, _, err := c.Jobs().Validate(bad, nil)
	require.NoError(t, err)
	require.Contains(t, val.Error, `function "key": this cluster has no Consul integration`)

	grace := testJob("grace")
	grace.TaskGroups[0].Tasks[0].Templates = []*api.Template{{EmbeddedTmpl: new("x"), DestPath: new("local/x"), VaultGrace: new(time.Minute)}}
	_, _, err = c.Jobs().Register(grace, nil)
	requireStatus(t, err, http.StatusBadRequest, `group "web": task "server": vault_grace: vault_grace is for Vault tokens: this cluster has no Vault integration`)
}
