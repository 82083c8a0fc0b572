package nomad

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// queryTestServer starts a one-server cluster and waits until it leads
// (its signing key is committed after its election).
func queryTestServer(t *testing.T) *Server {
	t.Helper()
	srv, err := NewServer(Config{NodeName: "query", DataDir: t.TempDir(), RPCAddr: "127.0.0.1:0", BootstrapExpect: 1, NumSchedulers: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Shutdown() })
	require.NoError(t, srv.waitForSigningKey(30*time.Second))
	return srv
}

// policyACL compiles an ACL from policy documents.
func policyACL(t *testing.T, rules ...string) *acl.ACL {
	t.Helper()
	var policies []*acl.Policy
	for _, r := range rules {
		p, err := acl.Parse(r)
		require.NoError(t, err)
		policies = append(policies, p)
	}
	a, err := acl.Compile(policies)
	require.NoError(t, err)
	return a
}

// seedJobs stores job "web" in default, team-a and other (namespaces
// included) directly in the state store, at indexes from 100.
func seedJobs(t *testing.T, srv *Server) {
	t.Helper()
	st := srv.State()
	require.NoError(t, st.UpsertNamespaces(100, []*structs.Namespace{{Name: "team-a"}, {Name: "other"}}))
	for i, ns := range []string{"default", "team-a", "other"} {
		j := mock.Job("web")
		j.Namespace = ns
		require.NoError(t, st.UpsertJob(uint64(101+i), nil, j))
	}
}

func TestJobReads_Authorization(t *testing.T) {
	srv := queryTestServer(t)
	seedJobs(t, srv)
	readTeams := policyACL(t, `namespace "team-*" { policy = "read" }`)
	listOnly := policyACL(t, `namespace "default" { capabilities = ["list-jobs"] }`)

	for _, c := range []struct {
		name    string
		acl     *acl.ACL
		ns      string
		allowed bool
	}{
		{"no ACL (ACLs disabled) reads anything", nil, "other", true},
		{"management reads anything", acl.ManagementACL(), "default", true},
		{"a wildcard grants the namespaces it matches", readTeams, "team-a", true},
		{"a wildcard grants nothing outside it", readTeams, "default", false},
		{"list-jobs is not read-job", listOnly, "default", false},
		{"deny-all reads nothing", acl.DenyAll(), "default", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := QueryOptions{Namespace: c.ns, ACL: c.acl}
			job, meta, err := srv.JobGet(t.Context(), opts, "web")
			_, _, sumErr := srv.JobSummary(t.Context(), opts, "web")
			_, _, allocErr := srv.JobAllocations(t.Context(), opts, "web", false)
			_, _, versErr := srv.JobVersions(t.Context(), opts, "web", false, nil)
			if !c.allowed {
				for _, e := range []error{err, sumErr, allocErr, versErr} {
					require.ErrorIs(t, e, structs.ErrForbidden)
				}
				return
			}
			for _, e := range []error{err, sumErr, allocErr, versErr} {
				require.NoError(t, e)
			}
			require.Equal(t, c.ns, job.Namespace)
			require.Equal(t, job.ModifyIndex, meta.Index)
		})
	}
}

func TestJobGet_MissingJobIs404WithTheTablesIndex(t *testing.T) {
	srv := queryTestServer(t)
	seedJobs(t, srv)
	_, meta, err := srv.JobGet(t.Context(), QueryOptions{Namespace: "team-a"}, "nope")
	require.ErrorIs(t, err, structs.ErrNotFound)
	require.EqualError(t, err, "job not found")
	require.Equal(t, uint64(103), meta.Index, "the jobs table's index")
	// An unknown job has no allocations rather than a 404; a list of a
	// table never written reports index 0.
	allocs, meta, err := srv.JobAllocations(t.Context(), QueryOptions{}, "nope", false)
	require.NoError(t, err)
	require.Empty(t, allocs)
	require.Zero(t, meta.Index)
}

func TestJobList_OnlyNamespacesTheCallerMayList(t *testing.T) {
	srv := queryTestServer(t)
	seedJobs(t, srv)
	namespaces := func(es []JobListEntry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Job.Namespace)
		}
		return out
	}

	all, meta, err := srv.JobList(t.Context(), QueryOptions{Namespace: AllNamespaces})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"default", "team-a", "other"}, namespaces(all))
	require.Equal(t, uint64(103), meta.Index)
	require.NotNil(t, all[0].Summary)

	teams := policyACL(t, `namespace "team-*" { capabilities = ["list-jobs"] }`)
	got, _, err := srv.JobList(t.Context(), QueryOptions{Namespace: AllNamespaces, ACL: teams})
	require.NoError(t, err)
	require.Equal(t, []string{"team-a"}, namespaces(got))

	_, _, err = srv.JobList(t.Context(), QueryOptions{Namespace: "default", ACL: teams})
	require.ErrorIs(t, err, structs.ErrForbidden, "a namespace the caller may not list")
	_, _, err = srv.JobList(t.Context(), QueryOptions{Namespace: AllNamespaces, ACL: acl.DenyAll()})
	require.ErrorIs(t, err, structs.ErrForbidden, "every namespace, with none allowed")

	// The filter sees each entry after authorization; its error ends the list.
	seen := 0
	got, _, err = srv.JobList(t.Context(), QueryOptions{Namespace: AllNamespaces, ACL: teams, Filter: func(obj any) (bool, error) {
		seen++
		return obj.(JobListEntry).Job.Namespace != "team-a", nil
	}})
	require.NoError(t, err)
	require.Empty(t, got)
	require.Equal(t, 1, seen, "only what the caller may list reaches the filter")
	_, _, err = srv.JobList(t.Context(), QueryOptions{Namespace: AllNamespaces, Filter: func(any) (bool, error) {
		return false, structs.BadRequestf("bad filter")
	}})
	require.EqualError(t, err, "bad filter")
}

func TestJobRegister_TheServerChecksSubmitAndNamespace(t *testing.T) {
	srv := queryTestServer(t)
	_, err := srv.UpsertNamespaces(nil, []*structs.Namespace{{Name: "team-a"}})
	require.NoError(t, err)
	job := func(ns string) *structs.Job {
		j := mock.Job("batch")
		j.Namespace, j.Type, j.Datacenters = ns, structs.JobTypeBatch, []string{"dc1"}
		j.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 64}
		j.TaskGroups[0].Update = nil
		j.TaskGroups[0].Tasks[0].Driver = "raw_exec"
		j.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/true"}
		return j
	}
	submitTeams := policyACL(t, `namespace "team-*" { policy = "write" }`)

	_, err = srv.JobRegister(&JobRegisterArgs{Job: job("nope")})
	require.ErrorIs(t, err, structs.ErrBadRequest, "even with ACLs disabled")
	require.EqualError(t, err, `job "batch" is in nonexistent namespace "nope"`)
	_, err = srv.JobPlan(nil, job("nope"), false)
	require.EqualError(t, err, `job "batch" is in nonexistent namespace "nope"`)

	_, err = srv.JobRegister(&JobRegisterArgs{Job: job("default"), ACL: submitTeams})
	require.ErrorIs(t, err, structs.ErrForbidden)
	_, err = srv.JobRegister(&JobRegisterArgs{Job: job("elsewhere"), ACL: submitTeams})
	require.ErrorIs(t, err, structs.ErrForbidden, "the submit check comes before the namespace check")

	reply, err := srv.JobRegister(&JobRegisterArgs{Job: job("team-a"), ACL: submitTeams})
	require.NoError(t, err)
	stored, meta, err := srv.JobGet(t.Context(), QueryOptions{Namespace: "team-a"}, "batch")
	require.NoError(t, err)
	require.Equal(t, reply.JobModifyIndex, stored.JobModifyIndex)
	require.Equal(t, stored.ModifyIndex, meta.Index)

	// The writes on an existing job check submit-job in its namespace.
	readOnly := policyACL(t, `namespace "team-a" { policy = "read" }`)
	_, err = srv.JobDeregister("team-a", "batch", JobDeregisterOptions{ACL: readOnly})
	require.ErrorIs(t, err, structs.ErrForbidden)
	_, err = srv.JobRevert(readOnly, "team-a", "batch", 0, nil)
	require.ErrorIs(t, err, structs.ErrForbidden)
	_, err = srv.JobStability(readOnly, "team-a", "batch", 0, true)
	require.ErrorIs(t, err, structs.ErrForbidden)
	_, _, err = srv.JobEvaluate(readOnly, "team-a", "batch")
	require.ErrorIs(t, err, structs.ErrForbidden)
	_, _, err = srv.JobEvaluate(submitTeams, "team-a", "batch")
	require.NoError(t, err)
}

func TestJobGet_BlocksUntilTheJobChanges(t *testing.T) {
	srv := queryTestServer(t)
	seedJobs(t, srv)
	done := make(chan uint64, 1)
	go func() {
		j, _, err := srv.JobGet(t.Context(), QueryOptions{Namespace: "team-a", MinIndex: 102, MaxWait: time.Minute}, "web")
		if err != nil {
			done <- 0
			return
		}
		done <- j.ModifyIndex
	}()
	select {
	case idx := <-done:
		t.Fatalf("answered at index %d before the job changed", idx)
	case <-time.After(50 * time.Millisecond):
	}
	j := mock.Job("web")
	j.Namespace = "team-a"
	require.NoError(t, srv.State().UpsertJob(110, nil, j))
	select {
	case idx := <-done:
		require.Equal(t, uint64(110), idx)
	case <-time.After(10 * time.Second):
		t.Fatal("the write did not answer the blocking query")
	}
}

func TestJobScaleStatus_NeedsReadJobScalingNotReadJob(t *testing.T) {
	srv := queryTestServer(t)
	seedJobs(t, srv)
	scaling := policyACL(t, `namespace "team-a" { capabilities = ["read-job-scaling"] }`)
	sc, _, err := srv.JobScaleStatus(t.Context(), QueryOptions{Namespace: "team-a", ACL: scaling}, "web")
	require.NoError(t, err)
	require.Equal(t, "team-a", sc.Job.Namespace)
	_, _, err = srv.JobGet(t.Context(), QueryOptions{Namespace: "team-a", ACL: scaling}, "web")
	require.ErrorIs(t, err, structs.ErrForbidden, "read-job-scaling is not read-job")
	readOnly := policyACL(t, `namespace "team-a" { capabilities = ["read-job"] }`)
	_, _, err = srv.JobScaleStatus(t.Context(), QueryOptions{Namespace: "team-a", ACL: readOnly}, "web")
	require.ErrorIs(t, err, structs.ErrForbidden)
}
