package taskenv

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/drover-project/drover/nomad/structs"
)

func TestBuild_IdentityEnv(t *testing.T) {
	alloc := &structs.Allocation{ID: "a1", SignedIdentities: map[string]string{"web": "jwt-d", "web/vault": "jwt-v", "web/consul": "jwt-c"}}
	task := &structs.Task{
		Name:     "web",
		Env:      map[string]string{"NOMAD_TOKEN": "from-env-block"},
		Identity: &structs.WorkloadIdentity{Name: "default", Env: true},
		Identities: []*structs.WorkloadIdentity{
			{Name: "vault", Env: true},
			{Name: "consul", File: true}, // not in the environment
		},
	}
	vars := Build(Input{Alloc: alloc, Task: task}).Map()
	assert.Equal(t, "jwt-d", vars["NOMAD_TOKEN"], "the identity wins over the env block")
	assert.Equal(t, "jwt-v", vars["NOMAD_TOKEN_vault"])
	assert.NotContains(t, vars, "NOMAD_TOKEN_consul")

	// No identity block: the env block's value stays; nothing is added.
	plain := &structs.Task{Name: "web", Env: map[string]string{"NOMAD_TOKEN": "x"}}
	vars = Build(Input{Alloc: alloc, Task: plain}).Map()
	assert.Equal(t, "x", vars["NOMAD_TOKEN"])
	assert.NotContains(t, vars, "NOMAD_TOKEN_vault")
}
