package taskenv

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func TestEnvDenylist(t *testing.T) {
	for _, tc := range []struct {
		name    string
		options map[string]string
		want    []string
	}{
		{"unset is Nomad's default", nil, DefaultEnvDenylist},
		{"set replaces the default", map[string]string{"env.denylist": "SECRET, OTHER ,,"}, []string{"SECRET", "OTHER"}},
		{"set empty denies nothing", map[string]string{"env.denylist": ""}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, EnvDenylist(tc.options))
		})
	}
	require.Contains(t, DefaultEnvDenylist, "VAULT_TOKEN")
	require.Contains(t, DefaultEnvDenylist, "AWS_SECRET_ACCESS_KEY")
}

func TestHostEnv(t *testing.T) {
	env := HostEnv([]string{
		"PATH=/usr/bin:/bin", "HOME=/root", "VAULT_TOKEN=s.secret", "EMPTY=", "A=1", "A=2", "=bad", "noequals",
		"WITH=equals=inside",
	}, DefaultEnvDenylist)
	require.Equal(t, map[string]string{
		"PATH": "/usr/bin:/bin", "HOME": "/root", "EMPTY": "", "A": "2", "WITH": "equals=inside",
	}, env)
}

func TestBuild_HostEnvIsOverriddenByTaskVariables(t *testing.T) {
	a := &structs.Allocation{ID: "a1", Name: "j.g[0]", JobID: "j", TaskGroup: "g", Namespace: "default",
		Job: &structs.Job{ID: "j", Name: "j", Region: "global"}}
	task := &structs.Task{Name: "t", Env: map[string]string{"HOME": "/home/app", "P": "${PATH}"}}
	e := Build(Input{Alloc: a, Task: task, HostEnv: map[string]string{
		"PATH": "/usr/bin", "HOME": "/root", "NOMAD_ALLOC_ID": "from-host",
	}})
	require.Equal(t, "/usr/bin", mustGet(t, e, "PATH"), "inherited")
	require.Equal(t, "/home/app", mustGet(t, e, "HOME"), "the env block wins")
	require.Equal(t, "a1", mustGet(t, e, "NOMAD_ALLOC_ID"), "NOMAD_* wins")
	require.Equal(t, "/usr/bin", mustGet(t, e, "P"), "host variables interpolate in the env block")

	_, ok := Build(Input{Alloc: a, Task: task}).Get("PATH")
	require.False(t, ok, "no host env, no PATH")
}

func mustGet(t *testing.T, e *Env, k string) string {
	t.Helper()
	v, ok := e.Get(k)
	require.True(t, ok, k)
	return v
}
