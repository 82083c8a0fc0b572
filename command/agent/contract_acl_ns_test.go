package agent

import (
	"net/http"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// registerIn registers testJob(id) in namespace ns with the management
// client and returns its deployment ID.
func registerIn(t *testing.T, c *api.Client, ns, id string) string {
	t.Helper()
	job := testJob(id)
	job.Namespace = &ns
	resp, _, err := c.Jobs().Register(job, nil)
	require.NoError(t, err)
	eval := waitEvalComplete(t, c, resp.EvalID)
	require.NotEmpty(t, eval.DeploymentID, "namespace %s", ns)
	return eval.DeploymentID
}

func TestContractACL_ReadOnlyTokenAndNamespaceIsolation(t *testing.T) {
	ta := newACLTestAgent(t)
	c := ta.client
	ta.registerNode(t, "node-1")
	ta.registerNode(t, "node-2")
	for _, ns := range []string{"a", "b"} {
		_, err := c.Namespaces().Register(&api.Namespace{Name: ns, Description: "team " + ns}, nil)
		require.NoError(t, err)
	}
	depA := registerIn(t, c, "a", "web")
	depB := registerIn(t, c, "b", "web") // the same job ID in another namespace

	// Registering into a namespace that does not exist: 400, nothing written.
	job := testJob("ghost")
	ghostNS := "nowhere"
	job.Namespace = &ghostNS
	_, _, err := c.Jobs().Register(job, nil)
	requireStatus(t, err, http.StatusBadRequest, `job "ghost" is in nonexistent namespace "nowhere"`)

	// A read-only token reads jobs and deployments everywhere but changes nothing.
	ro := ta.clientWith(t, ta.tokenFor(t, "ro", `namespace "*" { policy = "read" }`).SecretID)
	qa := &api.QueryOptions{Namespace: "a"}
	wa := &api.WriteOptions{Namespace: "a"}
	_, _, err = ro.Jobs().Info("web", qa)
	require.NoError(t, err)
	all, _, err := ro.Jobs().List(&api.QueryOptions{Namespace: "*"})
	require.NoError(t, err)
	require.Len(t, all, 2)
	d, _, err := ro.Deployments().Info(depA, nil)
	require.NoError(t, err)
	require.Equal(t, "a", d.Namespace)
	_, _, err = ro.Jobs().Register(func() *api.Job { j := testJob("web"); ns := "a"; j.Namespace = &ns; return j }(), nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = ro.Jobs().Deregister("web", false, wa)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = ro.Deployments().PromoteAll(depA, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = ro.Deployments().Fail(depA, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = ro.Deployments().Pause(depA, true, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = ro.Deployments().SetAllocHealth(depA, []string{"x"}, nil, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = ro.Jobs().Revert("web", 0, nil, wa, "", "")
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = ro.Nodes().List(nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")

	// A token for namespace a neither sees nor touches b.
	ac := ta.clientWith(t, ta.tokenFor(t, "team-a", `namespace "a" { policy = "write" }`).SecretID)
	mine, _, err := ac.Jobs().List(&api.QueryOptions{Namespace: "*"})
	require.NoError(t, err)
	require.Len(t, mine, 1)
	require.Equal(t, "a", mine[0].Namespace)
	_, _, err = ac.Jobs().Info("web", &api.QueryOptions{Namespace: "b"})
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = ac.Deployments().Info(depB, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	deps, _, err := ac.Deployments().List(&api.QueryOptions{Namespace: "*"})
	require.NoError(t, err)
	require.Len(t, deps, 1)
	require.Equal(t, depA, deps[0].ID)
	allocs, _, err := ac.Allocations().List(&api.QueryOptions{Namespace: "*"})
	require.NoError(t, err)
	for _, a := range allocs {
		require.Equal(t, "a", a.Namespace)
	}
	require.NotEmpty(t, allocs)
	_, _, err = ac.Deployments().Fail(depB, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = ac.Jobs().Deregister("web", false, &api.WriteOptions{Namespace: "b"})
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	jb := testJob("web")
	nsB := "b"
	jb.Namespace = &nsB
	_, _, err = ac.Jobs().Register(jb, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	nss, _, err := ac.Namespaces().List(nil)
	require.NoError(t, err)
	require.Len(t, nss, 1)
	require.Equal(t, "a", nss[0].Name)

	// ... but acts in a: pause and fail its own deployment.
	_, _, err = ac.Deployments().Pause(depA, true, nil)
	require.NoError(t, err)
	_, _, err = ac.Deployments().Fail(depA, nil)
	require.NoError(t, err)
	// b's deployment is untouched.
	db, _, err := c.Deployments().Info(depB, nil)
	require.NoError(t, err)
	require.Equal(t, "running", db.Status)

	// Management does everything, b included.
	_, _, err = c.Deployments().Fail(depB, nil)
	require.NoError(t, err)
	_, _, err = c.Jobs().Deregister("web", true, &api.WriteOptions{Namespace: "b"})
	require.NoError(t, err)
	_, err = c.Namespaces().Delete("b", nil)
	require.NoError(t, err)
	_, err = c.Namespaces().Delete("default", nil)
	requireStatus(t, err, http.StatusBadRequest, "default namespace can not be deleted")
	_, err = c.Namespaces().Delete("a", nil)
	requireStatus(t, err, http.StatusBadRequest, `namespace "a" has non-terminal jobs`)
}

func TestContractNamespaces_ACLsOff(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	nss, _, err := c.Namespaces().List(nil)
	require.NoError(t, err)
	require.Len(t, nss, 1)
	require.Equal(t, "default", nss[0].Name)
	_, err = c.Namespaces().Register(&api.Namespace{Name: "*"}, nil)
	requireStatus(t, err, http.StatusBadRequest, `invalid name "*".`)
	_, _, err = c.Namespaces().Info("nope", nil)
	requireStatus(t, err, http.StatusNotFound, "not found")
	_, _, err = c.ACLTokens().Bootstrap(nil)
	requireStatus(t, err, http.StatusBadRequest, "ACL support disabled")
	// Without ACLs every request is allowed.
	_, _, err = c.Nodes().List(nil)
	require.NoError(t, err)
}
