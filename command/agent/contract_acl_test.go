package agent

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/command/agent/config"
)

// aclTestAgent is a test agent with ACLs on, its management token, and a
// clock the test can move forward.
type aclTestAgent struct {
	*testAgent
	root   *api.ACLToken
	offset *atomic.Int64 // added to the server's wall clock, nanoseconds
}

// newACLTestAgent starts a single-server agent with ACLs enabled and
// bootstraps them; ta.client carries the management token.
func newACLTestAgent(t *testing.T) *aclTestAgent {
	t.Helper()
	offset := &atomic.Int64{}
	cfg := config.DevConfig()
	cfg.Name = fmt.Sprintf("acl-%d", time.Now().UnixNano())
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	cfg.Client.Enabled = false
	cfg.DataDir = t.TempDir()
	cfg.ACL.Enabled = true
	cfg.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	logger := hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: os.Stderr})
	a, err := NewAgent(cfg, logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Shutdown() })
	client, err := api.NewClient(&api.Config{Address: "http://" + a.HTTPAddr()})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return a.Server().IsLeader() }, 10*time.Second, 20*time.Millisecond)
	root, _, err := client.ACLTokens().Bootstrap(nil)
	require.NoError(t, err)
	client.SetSecretID(root.SecretID)
	return &aclTestAgent{testAgent: &testAgent{Agent: a, client: client}, root: root, offset: offset}
}

// clientWith returns an api client for the agent using secret ("" for
// anonymous).
func (ta *testAgent) clientWith(t *testing.T, secret string) *api.Client {
	t.Helper()
	c, err := api.NewClient(&api.Config{Address: "http://" + ta.HTTPAddr(), SecretID: secret})
	require.NoError(t, err)
	return c
}

// tokenFor creates a client token holding a new policy with rules.
func (ta *aclTestAgent) tokenFor(t *testing.T, name, rules string) *api.ACLToken {
	t.Helper()
	_, err := ta.client.ACLPolicies().Upsert(&api.ACLPolicy{Name: name, Rules: rules}, nil)
	require.NoError(t, err)
	tok, _, err := ta.client.ACLTokens().Create(&api.ACLToken{Name: name, Type: "client", Policies: []string{name}}, nil)
	require.NoError(t, err)
	return tok
}

func TestContractACL_BootstrapOnceAndReset(t *testing.T) {
	ta := newACLTestAgent(t)
	require.Equal(t, "management", ta.root.Type)

	anon := ta.clientWith(t, "")
	_, _, err := anon.ACLTokens().Bootstrap(nil)
	requireStatus(t, err, http.StatusBadRequest, "ACL bootstrap already done (reset index: ")
	m := regexp.MustCompile(`reset index: (\d+)\)`).FindStringSubmatch(err.Error())
	require.Len(t, m, 2, "the error names the reset index: %s", err)
	idx := m[1]

	// The reset file in the server data dir lets one more bootstrap
	// through, here with an operator-supplied secret.
	path := filepath.Join(ta.Server().Config().DataDir, "server", "acl-bootstrap-reset")
	require.NoError(t, os.WriteFile(path, []byte(idx), 0o600))
	secret := "2b778dd9-f5f1-6f29-b4b4-9a5fa948757a"
	tok, _, err := anon.ACLTokens().BootstrapOpts(secret, nil)
	require.NoError(t, err)
	require.Equal(t, secret, tok.SecretID)
	require.Equal(t, "management", tok.Type)
	// The old reset index no longer works.
	_, _, err = anon.ACLTokens().Bootstrap(nil)
	requireStatus(t, err, http.StatusBadRequest, "ACL bootstrap already done")

	_, _, err = anon.ACLTokens().BootstrapOpts("badtoken", nil)
	requireStatus(t, err, http.StatusBadRequest, "invalid acl token")
}

func TestContractACL_PolicyCRUDAndBadInput(t *testing.T) {
	ta := newACLTestAgent(t)
	c := ta.client
	ps := c.ACLPolicies()

	_, err := ps.Upsert(&api.ACLPolicy{Name: "ro", Description: "read", Rules: `namespace "default" { policy = "read" }`}, nil)
	require.NoError(t, err)
	got, _, err := ps.Info("ro", nil)
	require.NoError(t, err)
	require.Equal(t, "read", got.Description)
	require.Contains(t, got.Rules, `policy = "read"`)

	bad := []struct {
		policy *api.ACLPolicy
		want   string
	}{
		{&api.ACLPolicy{Name: "bad", Rules: `namespace "default" { policy = "admin" }`}, `namespace "default" rule: invalid policy "admin"`},
		{&api.ACLPolicy{Name: "bad", Rules: `namespace "default" { capabilities = ["fly"] }`}, `invalid capability "fly"`},
		{&api.ACLPolicy{Name: "bad", Rules: `node { policy = "scale" }`}, `node rule: invalid policy "scale"`},
		{&api.ACLPolicy{Name: "bad", Rules: `namespace "default" {`}, `failed to parse rules of ACL policy "bad"`},
		{&api.ACLPolicy{Name: "bad", Rules: ""}, "policy is empty"},
		{&api.ACLPolicy{Name: "bad name!", Rules: `node { policy = "read" }`}, "invalid name 'bad name!'"},
	}
	for _, b := range bad {
		_, err := ps.Upsert(b.policy, nil)
		requireStatus(t, err, http.StatusBadRequest, b.want)
	}
	list, _, err := ps.List(nil)
	require.NoError(t, err)
	require.Len(t, list, 1, "nothing written by the refused requests")

	_, err = ps.Delete("ro", nil)
	require.NoError(t, err)
	_, _, err = ps.Info("ro", nil)
	requireStatus(t, err, http.StatusNotFound, "ACL policy not found")
}

func TestContractACL_TokensAndRoles(t *testing.T) {
	ta := newACLTestAgent(t)
	c := ta.client
	ro := ta.tokenFor(t, "ro", `namespace "default" { policy = "read" }`)

	// Malformed tokens: 400 naming the problem, nothing written.
	bad := []struct {
		tok  *api.ACLToken
		want string
	}{
		{&api.ACLToken{Type: "admin", Policies: []string{"ro"}}, "token type must be client or management"},
		{&api.ACLToken{Type: "client"}, "client token missing policies or roles"},
		{&api.ACLToken{Type: "management", Policies: []string{"ro"}}, "management token cannot be associated with policies or roles"},
		{&api.ACLToken{Type: "client", Policies: []string{"ro"}, ExpirationTTL: time.Second}, "expiration time cannot be less than 1m0s"},
		{&api.ACLToken{Type: "client", Roles: []*api.ACLTokenRoleLink{{Name: "nope"}}}, "cannot find role nope"},
	}
	for _, b := range bad {
		_, _, err := c.ACLTokens().Create(b.tok, nil)
		requireStatus(t, err, http.StatusBadRequest, b.want)
	}
	list, _, err := c.ACLTokens().List(nil)
	require.NoError(t, err)
	require.Len(t, list, 2, "bootstrap and ro only")

	// Self, and a token reads itself but not others.
	roClient := ta.clientWith(t, ro.SecretID)
	self, _, err := roClient.ACLTokens().Self(nil)
	require.NoError(t, err)
	require.Equal(t, ro.AccessorID, self.AccessorID)
	_, _, err = roClient.ACLTokens().Info(ta.root.AccessorID, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = roClient.ACLTokens().List(nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = roClient.ACLTokens().Create(&api.ACLToken{Type: "management"}, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	mine, _, err := roClient.ACLPolicies().List(nil)
	require.NoError(t, err)
	require.Len(t, mine, 1)

	// Roles: a token linked to a role gets the role's policies.
	role, _, err := c.ACLRoles().Create(&api.ACLRole{Name: "ops", Policies: []*api.ACLRolePolicyLink{{Name: "ro"}}}, nil)
	require.NoError(t, err)
	_, _, err = c.ACLRoles().Create(&api.ACLRole{Name: "ops2", Policies: []*api.ACLRolePolicyLink{{Name: "nope"}}}, nil)
	requireStatus(t, err, http.StatusBadRequest, "cannot find policy nope")
	_, _, err = c.ACLRoles().Create(&api.ACLRole{Name: "ops", Policies: []*api.ACLRolePolicyLink{{Name: "ro"}}}, nil)
	requireStatus(t, err, http.StatusBadRequest, "ACL role with name ops already exists")
	viaRole, _, err := c.ACLTokens().Create(&api.ACLToken{Type: "client", Roles: []*api.ACLTokenRoleLink{{Name: "ops"}}}, nil)
	require.NoError(t, err)
	require.Equal(t, role.ID, viaRole.Roles[0].ID)
	rc := ta.clientWith(t, viaRole.SecretID)
	_, _, err = rc.Jobs().List(nil)
	require.NoError(t, err)
	_, _, err = rc.Jobs().Register(testJob("web"), nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	r2, _, err := rc.ACLRoles().Get(role.ID, nil)
	require.NoError(t, err)
	require.Equal(t, "ops", r2.Name)

	// Deleting the token revokes it.
	_, err = c.ACLTokens().Delete(viaRole.AccessorID, nil)
	require.NoError(t, err)
	_, _, err = rc.Jobs().List(nil)
	requireStatus(t, err, http.StatusForbidden, "ACL token not found")
}

func TestContractACL_ExpiredTokenRefused(t *testing.T) {
	ta := newACLTestAgent(t)
	tok := ta.tokenFor(t, "ro", `namespace "default" { policy = "read" }`)
	short, _, err := ta.client.ACLTokens().Create(&api.ACLToken{Type: "client", Policies: []string{"ro"}, ExpirationTTL: time.Minute}, nil)
	require.NoError(t, err)
	require.NotNil(t, short.ExpirationTime)
	sc := ta.clientWith(t, short.SecretID)
	_, _, err = sc.Jobs().List(nil)
	require.NoError(t, err)

	ta.offset.Store(int64(2 * time.Minute))
	_, _, err = sc.Jobs().List(nil)
	requireStatus(t, err, http.StatusForbidden, "ACL token expired")
	_, _, err = ta.clientWith(t, tok.SecretID).Jobs().List(nil)
	require.NoError(t, err, "a token without expiry still works")
}

func TestContractACL_AnonymousPolicyAndBearer(t *testing.T) {
	ta := newACLTestAgent(t)
	anon := ta.clientWith(t, "")
	_, _, err := anon.Jobs().List(nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")

	_, err = ta.client.ACLPolicies().Upsert(&api.ACLPolicy{Name: "anonymous", Rules: `namespace "default" { policy = "read" }`}, nil)
	require.NoError(t, err)
	_, _, err = anon.Jobs().List(nil)
	require.NoError(t, err, "the anonymous policy applies to requests without a token")
	_, _, err = anon.Jobs().Register(testJob("web"), nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")

	// Authorization: Bearer carries a token like X-Nomad-Token.
	req, err := http.NewRequest("GET", "http://"+ta.HTTPAddr()+"/v1/acl/token/self", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+ta.root.SecretID)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	_, _, err = ta.clientWith(t, "6b3c1f3e-0000-4000-8000-000000000000").Jobs().List(nil)
	requireStatus(t, err, http.StatusForbidden, "ACL token not found")
}

// TestContractACL_EveryRouteRefusesAnonymous walks the route table: with
// ACLs on and no anonymous policy, every route that needs a right answers
// an anonymous request with 403, and the routes open to any caller reveal
// nothing.
func TestContractACL_EveryRouteRefusesAnonymous(t *testing.T) {
	ta := newACLTestAgent(t)
	h := NewHTTPServer(ta.Agent, hclog.NewNullLogger())
	require.NotEmpty(t, h.routes)
	open := map[authKind]bool{authPublic: true, authNodeSecret: true, authCaller: true}
	checked := 0
	for _, rt := range h.routes {
		require.NotEqual(t, authUnset, rt.rule.kind, "%s %s has no authorization rule", rt.method, rt.path)
		if open[rt.rule.kind] {
			continue
		}
		path := rt.path
		for _, p := range []string{"{id}", "{name}", "{alloc}"} {
			path = strings.ReplaceAll(path, p, "6b3c1f3e-0000-4000-8000-000000000000")
		}
		req, err := http.NewRequest(rt.method, "http://"+ta.HTTPAddr()+path, strings.NewReader("{}"))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s %s", rt.method, rt.path)
		checked++
	}
	require.Greater(t, checked, 50)

	anon := ta.clientWith(t, "")
	nss, _, err := anon.Namespaces().List(nil)
	require.NoError(t, err)
	require.Empty(t, nss, "anonymous sees no namespace")
	pols, _, err := anon.ACLPolicies().List(nil)
	require.NoError(t, err)
	require.Empty(t, pols)
	_, _, err = anon.ACLTokens().Self(nil)
	requireStatus(t, err, http.StatusForbidden, "ACL token not found")
	_, _, err = anon.ACLTokens().Info(ta.root.AccessorID, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
}
