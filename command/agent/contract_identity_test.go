package agent

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad"
)

// TestContractACL_WorkloadIdentity: a workload identity signed by the
// keyring verifies against /.well-known/jwks.json, carries Nomad's claims,
// and works as a token: it reads its own job, is refused another
// namespace's job, gains what a job_acl policy grants, and stops working
// once its allocation stops.
func TestContractACL_WorkloadIdentity(t *testing.T) {
	ta := newACLTestAgent(t)
	c := ta.client
	ta.registerNode(t, "node-1")
	for _, ns := range []string{"a", "b"} {
		_, err := c.Namespaces().Register(&api.Namespace{Name: ns}, nil)
		require.NoError(t, err)
		registerIn(t, c, ns, "web")
	}
	allocs, _, err := c.Jobs().Allocations("web", false, &api.QueryOptions{Namespace: "a"})
	require.NoError(t, err)
	require.Len(t, allocs, 1)
	var keyID string
	require.Eventually(t, func() bool {
		k, err := ta.Server().State().ActiveRootKey(nil)
		if err == nil && k != nil {
			keyID = k.KeyID
		}
		return keyID != ""
	}, 10*time.Second, 20*time.Millisecond)
	alloc, err := ta.Server().State().AllocByID(nil, allocs[0].ID)
	require.NoError(t, err)
	signed, err := ta.Server().SignIdentity(alloc, "server", nil, time.Hour)
	require.NoError(t, err)

	// Verifiable by an outside system against the public JWKS.
	resp, err := http.Get("http://" + ta.HTTPAddr() + "/.well-known/jwks.json")
	require.NoError(t, err)
	var set jose.JSONWebKeySet
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&set))
	resp.Body.Close()
	parsed, err := jwt.ParseSigned(signed, []jose.SignatureAlgorithm{jose.RS256})
	require.NoError(t, err)
	require.Equal(t, keyID, parsed.Headers[0].KeyID)
	keys := set.Key(keyID)
	require.Len(t, keys, 1)
	var claims nomad.IdentityClaims
	require.NoError(t, parsed.Claims(keys[0].Key, &claims))
	require.Equal(t, "a", claims.Namespace)
	require.Equal(t, "web", claims.JobID)
	require.Equal(t, alloc.ID, claims.AllocationID)
	require.Equal(t, "server", claims.Task)
	require.Equal(t, "global:a:web:web:server:default", claims.Subject)
	require.Equal(t, jwt.Audience{nomad.DefaultIdentityAudience}, claims.Audience)
	require.NotNil(t, claims.Expiry)

	// As a token: its own job, not b's, not writes.
	wc := ta.clientWith(t, signed)
	job, _, err := wc.Jobs().Info("web", &api.QueryOptions{Namespace: "a"})
	require.NoError(t, err)
	require.Equal(t, "a", *job.Namespace)
	_, _, err = wc.Jobs().Info("web", &api.QueryOptions{Namespace: "b"})
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = wc.Jobs().Deregister("web", false, &api.WriteOptions{Namespace: "a"})
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = wc.Nodes().List(nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")

	// A policy attached to the job through job_acl adds its rules.
	_, err = c.ACLPolicies().Upsert(&api.ACLPolicy{Name: "web-nodes", Rules: `node { policy = "read" }`,
		JobACL: &api.JobACL{Namespace: "a", JobID: "web"}}, nil)
	require.NoError(t, err)
	_, _, err = wc.Nodes().List(nil)
	require.NoError(t, err)

	// A tampered token is refused.
	_, _, err = ta.clientWith(t, signed[:len(signed)-4]+"AAAA").Jobs().List(&api.QueryOptions{Namespace: "a"})
	requireStatus(t, err, http.StatusForbidden, "")

	// Expired: past its TTL it is refused.
	ta.offset.Store(int64(2 * time.Hour))
	_, _, err = wc.Jobs().Info("web", &api.QueryOptions{Namespace: "a"})
	requireStatus(t, err, http.StatusForbidden, "ACL token expired")
	ta.offset.Store(0)

	// Once the job is purged its allocation stops and the identity with it.
	_, _, err = c.Jobs().Deregister("web", true, &api.WriteOptions{Namespace: "a"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, _, err = wc.Jobs().List(&api.QueryOptions{Namespace: "a"})
		return err != nil
	}, 10*time.Second, 50*time.Millisecond)
	requireStatus(t, err, http.StatusForbidden, "")
}
