package fsm

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// populate fills every table of f through raft messages.
func populate(t *testing.T, f *FSM) {
	t.Helper()
	n := testNode()
	n.Events = []*structs.NodeEvent{{Message: "Node registered", Timestamp: time.Unix(10, 0).UTC()}}
	mustApply(t, f, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: n})
	for i, img := range []string{"nginx:1", "nginx:2"} {
		j := testJob("web")
		j.TaskGroups[0].Tasks[0].Config = map[string]any{"image": img, "ports": []any{"http"}}
		mustApply(t, f, uint64(2+i), structs.JobRegisterRequestType, &structs.JobRegisterRequest{
			Job: j, Eval: testEval(j), SubmitTime: int64(100 + i),
			Submission: &structs.JobSubmission{Source: img, Format: "hcl2", VariableFlags: map[string]string{"a": "b"}},
		})
	}
	job, err := f.State().JobByID(nil, "", "web")
	require.NoError(t, err)
	v0 := testJob("web")
	v0.Version = 0 // an alloc of the older version
	old := testAlloc(v0, n.ID)
	cur := testAlloc(job, n.ID)
	d := testDeployment(job)
	cur.DeploymentID = d.ID
	mustApply(t, f, 4, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		Job: job, AllocsUpdated: []*structs.Allocation{old, cur}, Deployment: d, UpdatedAt: 400,
	})
	mustApply(t, f, 5, structs.AllocClientUpdateRequestType, &structs.AllocClientUpdateRequest{
		Allocs: []*structs.Allocation{{
			ID: cur.ID, ClientStatus: structs.AllocClientStatusRunning,
			TaskStates: map[string]*structs.TaskState{"server": {
				State: "running", StartedAt: time.Unix(20, 0).UTC(),
				Events: []*structs.TaskEvent{{Type: "Started", Time: 20, Details: map[string]string{"k": "v"}}},
			}},
		}},
		UpdatedAt: 500,
	})
	mustApply(t, f, 6, structs.DeploymentAllocHealthRequestType, &structs.DeploymentAllocHealthRequest{
		DeploymentID: d.ID, HealthyAllocationIDs: []string{cur.ID}, Timestamp: 6e9,
	})
	mustApply(t, f, 7, structs.JobStabilityRequestType, &structs.JobStabilityRequest{Namespace: "default", JobID: "web", Version: 0, Stable: true})
	for i, id := range []string{"key-1", "key-2"} {
		mustApply(t, f, uint64(8+i), structs.KeyringUpsertRequestType, &structs.KeyringUpsertRequest{Key: &structs.RootKey{
			KeyID: id, Algorithm: structs.RootKeyAlgorithm, SigningKey: []byte(id),
			State: structs.RootKeyStateActive, CreateTime: int64(8 + i),
		}})
	}
	mustApply(t, f, 10, structs.ImageWatchUpdateRequestType, &structs.ImageWatchUpdateRequest{
		Checks: []*structs.ImageCheck{{Key: "nginx:2|", Reference: "nginx:2", Registry: "docker.io",
			LastCheck: 800, Digest: "sha256:b", DigestSince: 700, Checks: 3, Errors: 1, LastError: "HEAD: 503"}},
		Watches: []*structs.ImageWatch{{Namespace: "default", JobID: "web", Group: "web", Task: "server", Key: "nginx:2|",
			Assumed: "sha256:x", AssumedVersion: 1, LastRoll: &structs.ImageRoll{From: "sha256:a", To: "sha256:b", JobVersion: 1, Time: 750}}},
	})
	parent := testJob("nightly")
	parent.Type = structs.JobTypeBatch
	parent.Periodic = &structs.PeriodicConfig{Enabled: true, Specs: []string{"0 3 * * *"}}
	mustApply(t, f, 11, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: parent})
	at := time.Unix(86400+3*3600, 0).UTC()
	child := parent.DeriveChild(structs.PeriodicChildID("nightly", at))
	mustApply(t, f, 12, structs.PeriodicLaunchRequestType, &structs.PeriodicLaunchRequest{
		Launch: &structs.PeriodicLaunch{Namespace: "default", ID: "nightly", Launch: at},
		Child:  child,
		Eval:   &structs.Evaluation{ID: "eval-periodic", Namespace: "default", JobID: child.ID, Status: structs.EvalStatusPending, TriggeredBy: structs.EvalTriggerPeriodicJob},
	})
	mustApply(t, f, 13, structs.ServiceRegistrationUpsertRequestType, &structs.ServiceRegistrationUpsertRequest{
		Services: []*structs.ServiceRegistration{
			{ID: structs.ServiceRegistrationID(cur.ID, "web", "server", "web", "http"), ServiceName: "web", Namespace: "default",
				NodeID: n.ID, Datacenter: "dc1", JobID: "web", AllocID: cur.ID, Tags: []string{"a", "b"}, Address: "10.0.0.1", Port: 8080},
			{ID: structs.ServiceRegistrationID(cur.ID, "web", "", "web-admin", ""), ServiceName: "web-admin", Namespace: "default",
				NodeID: n.ID, Datacenter: "dc1", JobID: "web", AllocID: cur.ID, Address: "10.0.0.1"},
		},
	})
}

// contents reads every table of s.
type contents struct {
	Jobs, Versions []*structs.Job
	Subs           []*structs.JobSubmission
	Nodes          []*structs.Node
	Allocs         []*structs.Allocation
	Evals          []*structs.Evaluation
	Deps           []*structs.Deployment
	Keys           []*structs.RootKey
	Checks         []*structs.ImageCheck
	Watches        []*structs.ImageWatch
	Bad            []*structs.ImageBadDigest
	Launches       []*structs.PeriodicLaunch
	Services       []*structs.ServiceRegistration
	Indexes        []*state.IndexEntry
}

func readContents(t *testing.T, s *state.StateStore) contents {
	t.Helper()
	var c contents
	var err error
	c.Jobs, err = s.Jobs(nil, "*")
	require.NoError(t, err)
	c.Versions, err = s.JobVersions(nil)
	require.NoError(t, err)
	c.Subs, err = s.Submissions(nil)
	require.NoError(t, err)
	c.Nodes, err = s.Nodes(nil)
	require.NoError(t, err)
	c.Allocs, err = s.Allocs(nil)
	require.NoError(t, err)
	c.Evals, err = s.Evals(nil, "*")
	require.NoError(t, err)
	c.Deps, err = s.Deployments(nil, "*")
	require.NoError(t, err)
	c.Keys, err = s.RootKeys(nil)
	require.NoError(t, err)
	c.Checks, err = s.ImageChecks(nil)
	require.NoError(t, err)
	c.Watches, err = s.ImageWatches(nil)
	require.NoError(t, err)
	c.Bad, err = s.ImageBadDigests(nil)
	require.NoError(t, err)
	c.Launches, err = s.PeriodicLaunches(nil)
	require.NoError(t, err)
	c.Services, err = s.ServiceRegistrations(nil, "*")
	require.NoError(t, err)
	c.Indexes, err = s.Indexes()
	require.NoError(t, err)
	return c
}

func TestSnapshotRoundTrip(t *testing.T) {
	src := newFSM()
	populate(t, src)
	want := readContents(t, src.State())
	for _, n := range []int{len(want.Jobs), len(want.Versions), len(want.Subs), len(want.Nodes),
		len(want.Allocs), len(want.Evals), len(want.Deps), len(want.Keys), len(want.Checks), len(want.Watches), len(want.Launches), len(want.Services), len(want.Indexes)} {
		require.NotZero(t, n, "every table populated")
	}

	snap, err := src.Snapshot()
	require.NoError(t, err)
	// Writes after Snapshot() are not part of it.
	mustApply(t, src, 20, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode()})
	sink := &memSink{}
	require.NoError(t, snap.Persist(sink))
	snap.Release()
	require.True(t, sink.closed)

	dst := newFSM()
	mustApply(t, dst, 1, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("stale")})
	abandon := dst.State().AbandonCh()
	require.NoError(t, dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	<-abandon // closed by the restore

	got := readContents(t, dst.State())
	// alloc.Job is not in snapshots: compare it separately below. (In the
	// source it is the version row as of the alloc's insert; after a
	// restore, the restored row.)
	strip := func(allocs []*structs.Allocation) []*structs.Allocation {
		out := []*structs.Allocation{}
		for _, a := range allocs {
			c := *a
			c.Job = nil
			out = append(out, &c)
		}
		return out
	}
	gotAllocs := got.Allocs
	want.Allocs, got.Allocs = strip(want.Allocs), strip(got.Allocs)
	require.Equal(t, want, got)
	require.Equal(t, uint64(13), dst.State().LatestIndex())
	require.Len(t, got.Services, 2)
	byAlloc, err := dst.State().ServiceRegistrationsByAlloc(nil, got.Services[0].AllocID)
	require.NoError(t, err)
	require.Len(t, byAlloc, 2, "the restored registrations are indexed by allocation")
	for _, a := range gotAllocs {
		require.NotNil(t, a.Job, "alloc %s re-linked", a.ID)
		require.Equal(t, a.JobVersion, a.Job.Version)
		v, err := dst.State().JobByIDAndVersion(nil, a.Namespace, a.JobID, a.JobVersion)
		require.NoError(t, err)
		require.Same(t, v, a.Job, "linked to the shared version row")
	}
	sum, err := dst.State().JobSummaryByID(nil, "", "web")
	require.NoError(t, err)
	require.Equal(t, 1, sum.Summary["web"].Running)
}

func TestRestore_Rejects(t *testing.T) {
	src := newFSM()
	populate(t, src)
	snap, err := src.Snapshot()
	require.NoError(t, err)
	sink := &memSink{}
	require.NoError(t, snap.Persist(sink))
	full := sink.Bytes()

	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"truncated", full[:len(full)-1]},
		{"half", full[:len(full)/2]},
		{"wrong header", encodeValue(t, snapshotHeader{Format: "other", Version: 1})},
		{"unknown record", append(encodeValue(t, snapshotHeader{Format: snapshotFormat, Version: snapshotVersion}), encodeValue(t, uint8(77))...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := newFSM()
			mustApply(t, dst, 1, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("kept")})
			err := dst.Restore(io.NopCloser(bytes.NewReader(tc.data)))
			require.ErrorIs(t, err, errSnapshot)
			j, err := dst.State().JobByID(nil, "", "kept")
			require.NoError(t, err)
			require.NotNil(t, j, "a failed restore keeps the contents")
		})
	}
}

// encodeValue msgpack-encodes v.
func encodeValue(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, structs.EncodeValue(&buf, v))
	return buf.Bytes()
}
