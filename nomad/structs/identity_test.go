package structs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCanonicalize_Identities(t *testing.T) {
	j := testJob()
	task := j.TaskGroups[0].Tasks[0]
	task.Identities = []*WorkloadIdentity{{Name: "vault", Audience: []string{"vault.io"}}, {Env: true}}
	j.Canonicalize()
	require.Equal(t, &WorkloadIdentity{Name: "default", Audience: []string{"nomadproject.io"}, Env: true}, task.Identity)
	require.Equal(t, []*WorkloadIdentity{{Name: "vault", Audience: []string{"vault.io"}}}, task.Identities)
	j.Canonicalize() // idempotent
	require.Len(t, task.Identities, 1)
	require.NoError(t, j.Validate())

	// A task without identity blocks keeps none.
	j2 := testJob()
	j2.Canonicalize()
	require.Nil(t, j2.TaskGroups[0].Tasks[0].Identity)
	require.Nil(t, j2.TaskGroups[0].Tasks[0].Identities)
}

func TestIdentity_EnvAndFileNames(t *testing.T) {
	def := &WorkloadIdentity{Name: "default"}
	named := &WorkloadIdentity{Name: "vault"}
	custom := &WorkloadIdentity{Name: "x", File: true, Filepath: "local/x.jwt"}
	assert.Equal(t, "NOMAD_TOKEN", def.EnvVar())
	assert.Equal(t, "NOMAD_TOKEN_vault", named.EnvVar())
	assert.Equal(t, "secrets/nomad_token", def.FilePath())
	assert.Equal(t, "secrets/nomad_vault.jwt", named.FilePath())
	assert.Equal(t, "local/x.jwt", custom.FilePath())
	assert.Equal(t, "web", IdentityKey("web", def))
	assert.Equal(t, "web/vault", IdentityKey("web", named))
}

func TestValidate_IdentityProblems(t *testing.T) {
	cases := []struct {
		name string
		def  *WorkloadIdentity
		more []*WorkloadIdentity
		want string
	}{
		{"negative ttl", &WorkloadIdentity{TTL: -time.Second}, nil, `task "server": identity: ttl must not be negative, got -1s`},
		{"bad change_mode", &WorkloadIdentity{ChangeMode: "reload"}, nil, `identity: change_mode must be one of noop, restart or signal, got "reload"`},
		{"signal without signal", &WorkloadIdentity{ChangeMode: "signal"}, nil, `identity: change_signal is required with change_mode "signal"`},
		{"signal with restart", &WorkloadIdentity{ChangeMode: "restart", ChangeSignal: "SIGHUP"}, nil, `change_signal is only allowed with change_mode "signal"`},
		{"filepath without file", &WorkloadIdentity{Filepath: "local/t"}, nil, "identity: filepath requires file = true"},
		{"filepath escapes", &WorkloadIdentity{File: true, Filepath: "../../etc/passwd"}, nil, `filepath must be a path inside the task directory, got "../../etc/passwd"`},
		{"absolute filepath", &WorkloadIdentity{File: true, Filepath: "/etc/x"}, nil, `filepath must be a path inside the task directory, got "/etc/x"`},
		{"empty aud", &WorkloadIdentity{Audience: []string{""}}, nil, "identity: aud must not contain an empty string"},
		{"two unnamed", &WorkloadIdentity{}, []*WorkloadIdentity{{Env: true}}, `identity 1: only one identity block may omit name (or use "default")`},
		{"duplicate name", nil, []*WorkloadIdentity{{Name: "v"}, {Name: "v"}}, `identity "v": name is used by more than one identity`},
		{"bad name", nil, []*WorkloadIdentity{{Name: "a b"}}, `identity 0: name "a b" must be 1 to 128 letters, digits, "_" or "-"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := testJob()
			task := j.TaskGroups[0].Tasks[0]
			task.Identity, task.Identities = tc.def, tc.more
			err := j.Validate()
			var verr *ValidationError
			require.ErrorAs(t, err, &verr)
			assert.True(t, containsProblem(verr.Problems, tc.want), "want %q, got:\n%s", tc.want, err)
		})
	}
}

func TestTaskUpdateType_IdentityIsDestructive(t *testing.T) {
	old := testJob().TaskGroups[0].Tasks[0]
	changed := testJob().TaskGroups[0].Tasks[0]
	changed.Identity = &WorkloadIdentity{Name: "default", Env: true}
	assert.Equal(t, UpdateTypeDestructive, taskUpdateType(old, changed))
	same := testJob().TaskGroups[0].Tasks[0]
	assert.Equal(t, UpdateTypeNone, taskUpdateType(old, same))
}

func TestIdentitiesToSign(t *testing.T) {
	plain := &Task{Name: "t"}
	assert.Empty(t, plain.IdentitiesToSign(), "no identity block, no templates: nothing to sign")

	tmpl := &Task{Name: "t", Templates: []*Template{{EmbeddedTmpl: "x", DestPath: "local/x"}}}
	got := tmpl.IdentitiesToSign()
	require.Len(t, got, 1, "templates read the servers with the default identity")
	assert.Equal(t, WorkloadIdentityDefaultName, got[0].Name)
	assert.Equal(t, []string{WorkloadIdentityDefaultAudience}, got[0].Audience)
	assert.False(t, got[0].Env || got[0].File, "it is not handed to the task")
	assert.Equal(t, "t", IdentityKey("t", got[0]))

	own := &WorkloadIdentity{Name: WorkloadIdentityDefaultName, Env: true}
	tmpl.Identity = own
	assert.Equal(t, []*WorkloadIdentity{own}, tmpl.IdentitiesToSign(), "the task's own block is used")
}

// The template runners read the servers with the default identity as it
// was signed at placement; they are not given renewed tokens, so a default
// identity that expires is refused for a task with templates, and a valid
// job around it (no ttl, or no templates) is accepted.
func TestValidate_TemplatesRefuseExpiringDefaultIdentity(t *testing.T) {
	const want = `identity: ttl cannot be set on the default identity of a task with templates`
	cases := []struct {
		name      string
		def       *WorkloadIdentity
		templates bool
		refused   bool
	}{
		{"ttl with templates", &WorkloadIdentity{TTL: time.Hour, Env: true}, true, true},
		{"ttl without env or file, with templates", &WorkloadIdentity{TTL: time.Hour}, true, true},
		{"no ttl with templates", &WorkloadIdentity{Env: true}, true, false},
		{"ttl without templates", &WorkloadIdentity{TTL: time.Hour, Env: true}, false, false},
		{"no default identity with templates", nil, true, false},
		{"ttl on an identity named default, with templates", nil, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := testJob()
			task := j.TaskGroups[0].Tasks[0]
			task.Identity = tc.def
			task.Identities = []*WorkloadIdentity{{Name: "other", TTL: time.Hour, File: true}}
			if tc.def == nil && tc.refused {
				task.Identities = append([]*WorkloadIdentity{{Name: WorkloadIdentityDefaultName, TTL: time.Hour}}, task.Identities...)
			}
			if tc.templates {
				task.Templates = []*Template{okTemplate()}
			}
			err := j.Validate()
			if !tc.refused {
				require.NoError(t, err)
				return
			}
			var verr *ValidationError
			require.ErrorAs(t, err, &verr)
			assert.True(t, containsProblem(verr.Problems, want), "want %q, got:\n%s", want, err)
		})
	}
}
