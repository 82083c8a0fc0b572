package agent

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// TestContractVariablesCRUD drives the requests `nomad var put|get|list|
// purge` make through the api client: create, check-and-set conflicts
// answered with the stored variable, prefix lists with paging and filter,
// delete.
func TestContractVariablesCRUD(t *testing.T) {
	ta := newTestAgent(t, "")
	vars := ta.client.Variables()

	created, _, err := vars.Create(&api.Variable{Path: "app/db", Items: api.VariableItems{"user": "me", "pass": "s3cret"}}, nil)
	require.NoError(t, err)
	require.Equal(t, "default", created.Namespace)
	require.Positive(t, created.CreateIndex)
	require.Equal(t, created.CreateIndex, created.ModifyIndex)
	require.Positive(t, created.CreateTime)
	require.Equal(t, api.VariableItems{"user": "me", "pass": "s3cret"}, created.Items)

	got, _, err := vars.Read("app/db", nil)
	require.NoError(t, err)
	require.Equal(t, created, got)

	// Stored encrypted: the state store never holds the items in the clear.
	stored, err := ta.Server().State().VariableByPath(nil, "default", "app/db")
	require.NoError(t, err)
	require.NotEmpty(t, stored.Data)
	require.False(t, bytes.Contains(stored.Data, []byte("s3cret")))
	active, err := ta.Server().State().ActiveRootKey(nil)
	require.NoError(t, err)
	require.Equal(t, active.KeyID, stored.KeyID)

	// CheckedCreate of an existing variable, CheckedUpdate and
	// CheckedDelete at a stale index: 409 with the stored variable.
	_, _, err = vars.CheckedCreate(&api.Variable{Path: "app/db", Items: api.VariableItems{"x": "y"}}, nil)
	var conflict api.ErrCASConflict
	require.True(t, errors.As(err, &conflict), "%v", err)
	require.Equal(t, created, conflict.Conflict)

	upd := created.Copy()
	upd.Items["pass"] = "n3w"
	now, _, err := vars.CheckedUpdate(upd, nil)
	require.NoError(t, err)
	require.Greater(t, now.ModifyIndex, created.ModifyIndex)
	require.Equal(t, created.CreateIndex, now.CreateIndex)
	require.Equal(t, created.CreateTime, now.CreateTime)

	_, _, err = vars.CheckedUpdate(created, nil)
	require.True(t, errors.As(err, &conflict), "%v", err)
	require.Equal(t, now, conflict.Conflict)
	_, err = vars.CheckedDelete("app/db", created.ModifyIndex, nil)
	require.True(t, errors.As(err, &conflict), "%v", err)
	require.Equal(t, now, conflict.Conflict)

	for _, p := range []string{"app/web", "other/thing"} {
		_, _, err := vars.Create(&api.Variable{Path: p, Items: api.VariableItems{"k": "v"}}, nil)
		require.NoError(t, err)
	}
	list, _, err := vars.PrefixList("app/", nil)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, []string{"app/db", "app/web"}, []string{list[0].Path, list[1].Path})
	require.Equal(t, now.Metadata(), list[0])

	page, qm, err := vars.List(&api.QueryOptions{PerPage: 2})
	require.NoError(t, err)
	require.Len(t, page, 2)
	require.NotEmpty(t, qm.NextToken)
	rest, qm, err := vars.List(&api.QueryOptions{PerPage: 2, NextToken: qm.NextToken})
	require.NoError(t, err)
	require.Empty(t, qm.NextToken)
	require.Len(t, rest, 1)
	require.Equal(t, "other/thing", rest[0].Path)

	filtered, _, err := vars.List(&api.QueryOptions{Filter: `Path matches "web$"`})
	require.NoError(t, err)
	require.Len(t, filtered, 1)
	require.Equal(t, "app/web", filtered[0].Path)

	_, err = vars.CheckedDelete("app/db", now.ModifyIndex, nil)
	require.NoError(t, err)
	_, _, err = vars.Read("app/db", nil)
	require.ErrorIs(t, err, api.ErrVariablePathNotFound)
	peek, _, err := vars.Peek("app/db", nil)
	require.NoError(t, err)
	require.Nil(t, peek)
}

// TestContractVariablesValidation checks Nomad's path and size rules and
// their wording; nothing is written.
func TestContractVariablesValidation(t *testing.T) {
	ta := newTestAgent(t, "")
	vars := ta.client.Variables()
	cases := []struct {
		path  string
		items api.VariableItems
		want  string
	}{
		{"bad/var", nil, "variable missing required Items object"},
		{"has.dot", api.VariableItems{"k": "v"}, `invalid path "has.dot"`},
		{"nomad", api.VariableItems{"k": "v"}, `"nomad" is a reserved top-level directory path`},
		{"nomad/other", api.VariableItems{"k": "v"}, `only paths at "nomad/jobs" or "nomad/job-templates" and below`},
		{"big", api.VariableItems{"k": strings.Repeat("x", 64*1024)}, "variables are limited to 64KiB in total size"},
	}
	for _, c := range cases {
		_, _, err := vars.Create(&api.Variable{Path: c.path, Items: c.items}, nil)
		require.ErrorContains(t, err, "400", c.path)
		require.ErrorContains(t, err, c.want, c.path)
	}
	for _, ok := range []string{"nomad/jobs", "nomad/jobs/web/group/task", "nomad/job-templates/t"} {
		_, _, err := vars.Create(&api.Variable{Path: ok, Items: api.VariableItems{"k": "v"}}, nil)
		require.NoError(t, err, ok)
	}
	list, _, err := vars.List(nil)
	require.NoError(t, err)
	require.Len(t, list, 3)
}

// TestContractVariableLocks drives api.Locks as `nomad var lock` does: one
// holder at a time, the lock ID required to change the variable, renew and
// release by the holder only.
func TestContractVariableLocks(t *testing.T) {
	ta := newTestAgent(t, "")
	ctx := context.Background()
	v := api.Variable{Path: "locks/leader", Lock: &api.VariableLock{TTL: "10s", LockDelay: "10s"}}
	first, err := ta.client.Locks(api.WriteOptions{}, v)
	require.NoError(t, err)
	second, err := ta.client.Locks(api.WriteOptions{}, v, api.LocksOptionWithMaxRetries(0))
	require.NoError(t, err)

	path, err := first.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, "locks/leader", path)
	_, err = second.Acquire(ctx)
	require.ErrorIs(t, err, api.ErrLockConflict)
	require.NoError(t, first.Renew(ctx))
	require.ErrorIs(t, second.Renew(ctx), api.ErrLockConflict)
	require.ErrorIs(t, second.Release(ctx), api.ErrLockConflict)

	vars := ta.client.Variables()
	held, _, err := vars.Read("locks/leader", nil)
	require.NoError(t, err)
	require.NotNil(t, held.Lock)
	require.Equal(t, "10s", held.Lock.TTL)
	require.Empty(t, held.Items)

	// Only the holder changes a locked variable.
	_, _, err = vars.Update(&api.Variable{Path: "locks/leader", Items: api.VariableItems{"who": "second"}}, nil)
	var ue api.UnexpectedResponseError
	require.True(t, errors.As(err, &ue), "%v", err)
	require.Equal(t, http.StatusConflict, ue.StatusCode())
	upd, _, err := vars.Update(&api.Variable{Path: "locks/leader", Items: api.VariableItems{"who": "first"}, Lock: held.Lock}, nil)
	require.NoError(t, err)
	require.Equal(t, api.VariableItems{"who": "first"}, upd.Items)
	require.Equal(t, held.Lock.ID, upd.Lock.ID)

	// Renewing writes nothing.
	renewed, _, err := vars.RenewLock(&api.Variable{Path: "locks/leader", Lock: &api.VariableLock{ID: held.Lock.ID}}, nil)
	require.NoError(t, err)
	require.Equal(t, upd.ModifyIndex, renewed.ModifyIndex)

	require.NoError(t, first.Release(ctx))
	_, err = second.Acquire(ctx)
	require.NoError(t, err)
	after, _, err := vars.Read("locks/leader", nil)
	require.NoError(t, err)
	require.Equal(t, api.VariableItems{"who": "first"}, after.Items, "acquiring without items keeps them")
	require.NotEqual(t, held.Lock.ID, after.Lock.ID)

	// TTL and delay bounds.
	_, _, err = vars.AcquireLock(&api.Variable{Path: "locks/short", Lock: &api.VariableLock{TTL: "1s"}}, nil)
	require.ErrorContains(t, err, "lock TTL must be between 10s and 24h0m0s")
}

// TestContractVariablesACL: with ACLs on, the server checks each request's
// token per path: anonymous gets 403 and an empty list, a token reads and
// lists what its policy grants and nothing else; a writer without read
// gets a conflict's metadata only.
func TestContractVariablesACL(t *testing.T) {
	ta := newACLTestAgent(t)
	_, _, err := ta.client.Variables().Create(&api.Variable{Path: "team/a", Items: api.VariableItems{"k": "v"}}, nil)
	require.NoError(t, err)
	_, _, err = ta.client.Variables().Create(&api.Variable{Path: "ops/b", Items: api.VariableItems{"k": "v"}}, nil)
	require.NoError(t, err)

	anon := ta.clientWith(t, "").Variables()
	_, _, err = anon.Read("team/a", nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	list, _, err := anon.List(nil)
	require.NoError(t, err)
	require.Empty(t, list)

	tok := ta.tokenFor(t, "team", `namespace "default" {
  variables {
    path "team/*" { capabilities = ["read", "write"] }
  }
}`)
	team := ta.clientWith(t, tok.SecretID).Variables()
	got, _, err := team.Read("team/a", nil)
	require.NoError(t, err)
	require.Equal(t, "v", got.Items["k"])
	_, _, err = team.Read("ops/b", nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, err = team.Delete("team/a", nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	list, _, err = team.List(nil)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "team/a", list[0].Path)

	writer := ta.tokenFor(t, "writer", `namespace "default" {
  variables {
    path "team/*" { capabilities = ["write"] }
  }
}`)
	_, _, err = ta.clientWith(t, writer.SecretID).Variables().CheckedCreate(&api.Variable{Path: "team/a", Items: api.VariableItems{"x": "y"}}, nil)
	var conflict api.ErrCASConflict
	require.True(t, errors.As(err, &conflict), "%v", err)
	require.Nil(t, conflict.Conflict.Items, "no read: metadata only")
	require.Equal(t, got.ModifyIndex, conflict.Conflict.ModifyIndex)
}

// TestContractVariablesEvents: writes are Variables events with the
// metadata only (never items or ciphertext), deletions VariableDeleted.
func TestContractVariablesEvents(t *testing.T) {
	ta := newTestAgent(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := ta.client.EventStream().Stream(ctx, map[api.Topic][]string{"Variables": {"*"}}, 0, nil)
	require.NoError(t, err)
	_, _, err = ta.client.Variables().Create(&api.Variable{Path: "ev/a", Items: api.VariableItems{"secret": "hush"}}, nil)
	require.NoError(t, err)
	ev := nextEvents(t, ch)
	require.Len(t, ev.Events, 1)
	e := ev.Events[0]
	require.Equal(t, "VariableUpserted", e.Type)
	require.Equal(t, "ev/a", e.Key)
	raw, ok := e.Payload["Variable"].(map[string]any)
	require.True(t, ok, "%v", e.Payload)
	require.Equal(t, "ev/a", raw["Path"])
	for _, field := range []string{"Items", "Data", "KeyID"} {
		require.NotContains(t, raw, field, "neither items nor ciphertext travel")
	}
	_, err = ta.client.Variables().Delete("ev/a", nil)
	require.NoError(t, err)
	require.Equal(t, "VariableDeleted", nextEvents(t, ch).Events[0].Type)
}
