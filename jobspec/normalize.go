package jobspec

import (
	"time"

	"github.com/hashicorp/nomad/api"
)

// Defaults Nomad's parser itself writes into the job it sends (before and
// independently of api.Job.Canonicalize on the server). Each value is the
// documented default of its field, so a canonicalized job is the same
// either way; they matter for `/v1/jobs/parse` without canonicalize and
// `job run -output`, which show the parser's own output.
const (
	defaultChangeMode          = "restart"
	defaultTemplatePerms       = "0644"
	defaultTemplateSplay       = 5 * time.Second
	defaultChangeScriptTimeout = 5 * time.Second
	periodicSpecCron           = "cron"
)

// normalizeParsed applies the parser's own defaults to the decoded job:
// periodic spec type, vault and template defaults of every task.
func normalizeParsed(job *api.Job) {
	if p := job.Periodic; p != nil && p.Spec != nil && p.SpecType == nil {
		p.SpecType = new(periodicSpecCron)
	}
	for _, tg := range job.TaskGroups {
		if tg == nil {
			continue
		}
		for _, t := range tg.Tasks {
			if t == nil {
				continue
			}
			normalizeVault(t.Vault)
			for _, tmpl := range t.Templates {
				normalizeTemplate(tmpl)
			}
		}
	}
}

// normalizeVault fills env (true), disable_file (false) and change_mode
// ("restart") of a vault block.
func normalizeVault(v *api.Vault) {
	if v == nil {
		return
	}
	if v.Env == nil {
		v.Env = new(true)
	}
	if v.DisableFile == nil {
		v.DisableFile = new(false)
	}
	if v.ChangeMode == nil {
		v.ChangeMode = new(defaultChangeMode)
	}
}

// normalizeTemplate fills change_mode ("restart"), perms ("0644"), splay
// (5s) and error_on_missing_key (false) of a template block, and args ([]),
// timeout (5s) and fail_on_error (false) of its change_script.
func normalizeTemplate(t *api.Template) {
	if t == nil {
		return
	}
	if t.ChangeMode == nil {
		t.ChangeMode = new(defaultChangeMode)
	}
	if t.Perms == nil {
		t.Perms = new(defaultTemplatePerms)
	}
	if t.Splay == nil {
		t.Splay = new(defaultTemplateSplay)
	}
	if t.ErrMissingKey == nil {
		t.ErrMissingKey = new(false)
	}
	if cs := t.ChangeScript; cs != nil {
		if cs.Args == nil {
			cs.Args = []string{}
		}
		if cs.Timeout == nil {
			cs.Timeout = new(defaultChangeScriptTimeout)
		}
		if cs.FailOnError == nil {
			cs.FailOnError = new(false)
		}
	}
}
