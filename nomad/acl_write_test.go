package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// writeCase is one server write of a family, called without HTTP in front.
type writeCase struct {
	name string
	// run does the write as caller a.
	run func(a *acl.ACL) error
	// keepsIndex: a permitted run writes nothing to the state (it answers
	// from elsewhere: a signed token, the raft configuration, a stream).
	keepsIndex bool
	// done checks the permitted run's effect (nil: the index moving is
	// the check).
	done func(t *testing.T)
}

// testWrites runs every case as each refused caller first (the typed
// permission error, and the state index unchanged: nothing was written),
// then, in order, as allowed (no error, the index moved unless the case
// keeps it, then its own check).
func testWrites(t *testing.T, srv *Server, refused map[string]*acl.ACL, allowed *acl.ACL, cases []writeCase) {
	t.Helper()
	for _, c := range cases {
		for who, a := range refused {
			t.Run(c.name+"/refused/"+who, func(t *testing.T) {
				before := srv.State().LatestIndex()
				err := c.run(a)
				require.ErrorIs(t, err, structs.ErrForbidden)
				require.EqualError(t, err, structs.ErrPermissionDenied.Error())
				require.Equal(t, before, srv.State().LatestIndex(), "a refused write writes nothing")
			})
		}
	}
	for _, c := range cases {
		t.Run(c.name+"/allowed", func(t *testing.T) {
			before := srv.State().LatestIndex()
			require.NoError(t, c.run(allowed))
			if !c.keepsIndex {
				require.Greater(t, srv.State().LatestIndex(), before, "a permitted write is applied")
			}
			if c.done != nil {
				c.done(t)
			}
		})
	}
}

// ignore2 and ignore3 keep the error of a write's answer.
func ignore2[A any](_ A, err error) error         { return err }
func ignore3[A, B any](_ A, _ B, err error) error { return err }

// seedNode registers a ready node through raft (so that later writes move
// the state index past it).
func seedNode(t *testing.T, srv *Server) *structs.Node {
	t.Helper()
	n := mock.Node()
	applyOK(t, srv, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: n})
	return n
}

// seedJob registers job through raft, without an evaluation.
func seedJob(t *testing.T, srv *Server, job *structs.Job) {
	t.Helper()
	applyOK(t, srv, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job})
}

func applyOK(t *testing.T, srv *Server, mt structs.MessageType, msg any) {
	t.Helper()
	resp, _, err := srv.raftApply(mt, msg)
	require.NoError(t, err)
	if rerr, ok := resp.(error); ok {
		require.NoError(t, rerr)
	}
}

// teamJobWriters are the callers of the job-write tests in namespace
// team-a: refused ones may read there, or write elsewhere, or hold one
// other capability there; allowed holds only cap there.
func teamJobWriters(t *testing.T, other, cap string) (map[string]*acl.ACL, *acl.ACL) {
	return map[string]*acl.ACL{
		"read":            policyACL(t, `namespace "team-a" { policy = "read" }`),
		"write elsewhere": policyACL(t, `namespace "default" { policy = "write" }`, `node { policy = "write" }`),
		other:             policyACL(t, `namespace "team-a" { capabilities = ["`+other+`"] }`),
	}, policyACL(t, `namespace "team-a" { capabilities = ["`+cap+`"] }`)
}

// teamJob is a valid batch job in namespace team-a (created first),
// registered through raft.
func teamJob(t *testing.T, srv *Server, id string, edit func(*structs.Job)) *structs.Job {
	t.Helper()
	if ns, err := srv.State().NamespaceByName(nil, "team-a"); err == nil && ns == nil {
		_, err := srv.UpsertNamespaces(nil, []*structs.Namespace{{Name: "team-a"}})
		require.NoError(t, err)
	}
	j := mock.Job(id)
	j.Namespace, j.Type, j.Datacenters = "team-a", structs.JobTypeBatch, []string{"dc1"}
	j.TaskGroups[0].Update = nil
	j.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 64}
	if edit != nil {
		edit(j)
	}
	seedJob(t, srv, j)
	return j
}

// operatorWriters are the callers of the operator-write tests: refused
// ones hold operator read and every other write.
func operatorWriters(t *testing.T) (map[string]*acl.ACL, *acl.ACL) {
	return map[string]*acl.ACL{
		"operator read": policyACL(t, `operator { policy = "read" }`, `namespace "*" { policy = "write" }`,
			`node { policy = "write" }`, `agent { policy = "write" }`),
	}, policyACL(t, `operator { policy = "write" }`)
}
