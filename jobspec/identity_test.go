package jobspec

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

func TestDecode_IdentityBlocks(t *testing.T) {
	task := onlyTask(t, mustParse(t, wrapTask(`
      identity {
        env  = true
        file = true
      }
      identity {
        name          = "vault"
        aud           = ["vault.io", "other"]
        file          = true
        filepath      = "local/vault.jwt"
        ttl           = "1h"
        change_mode   = "signal"
        change_signal = "SIGHUP"
      }`)))
	require.Equal(t, &api.WorkloadIdentity{Env: true, File: true}, task.Identity)
	require.Equal(t, []*api.WorkloadIdentity{{
		Name: "vault", Audience: []string{"vault.io", "other"}, File: true, Filepath: "local/vault.jwt",
		TTL: time.Hour, ChangeMode: "signal", ChangeSignal: "SIGHUP",
	}}, task.Identities)
}

func TestDecode_IdentityDefaultByName(t *testing.T) {
	task := onlyTask(t, mustParse(t, wrapTask(`
      identity {
        name = "consul"
        aud  = ["consul.io"]
      }
      identity {
        name = "default"
        env  = true
      }`)))
	require.Equal(t, &api.WorkloadIdentity{Name: "default", Env: true}, task.Identity)
	require.Len(t, task.Identities, 1)
	require.Equal(t, "consul", task.Identities[0].Name)
}

func TestDecode_IdentityNone(t *testing.T) {
	task := onlyTask(t, mustParse(t, wrapTask(`driver = "raw_exec"`)))
	require.Nil(t, task.Identity)
	require.Nil(t, task.Identities)
}

func TestDecode_IdentityErrors(t *testing.T) {
	for name, body := range map[string]string{
		"unknown attribute": `identity { envv = true }`,
		"bad ttl":           `identity { ttl = "soon" }`,
		"label":             `identity "vault" { env = true }`,
		"bad env type":      `identity { env = "maybe" }`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseSrc(t, wrapTask(body))
			require.Error(t, err)
		})
	}
}
