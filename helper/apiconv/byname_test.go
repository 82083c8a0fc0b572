package apiconv

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/testutil/fill"
)

// structsOnlyFields are the structs fields with no api counterpart: they are
// deliberately not sent (or, for Allocation.JobVersion, sent another way).
var structsOnlyFields = map[string]bool{
	"Allocation.JobVersion":            true, // api: Job.Version / stub JobVersion
	"Node.SecretID":                    true, // never sent
	"DeploymentState.AutoPromote":      true, // server-side in Nomad too
	"Allocation.SignedIdentities":      true, // only to the node that runs it (internal endpoint)
	"Allocation.DisconnectedAt":        true, // server-side: when a plan marked it unknown or lost
	"Job.PayloadEncoding":              true, // JobToAPI decodes Payload
	"ClientHostVolumeConfig.Namespace": true, // server-set from the dynamic volume
	"DeploymentState.SignalsAtResume":  true, // server-side: rollout signal counts at the last resume
	"NodeResources.NodeNetworks":       true, // sent beside the node (wire.NodeRegisterRequest)
	"DeploymentState.Gate":             true, // Drover extension: wire.RolloutView.Gates and the status description carry it
}

// convertedPairs are the top-level types converted by name.
var convertedPairs = []struct{ s, a reflect.Type }{
	{reflect.TypeFor[structs.Job](), reflect.TypeFor[api.Job]()},
	{reflect.TypeFor[structs.Allocation](), reflect.TypeFor[api.Allocation]()},
	{reflect.TypeFor[structs.Allocation](), reflect.TypeFor[api.AllocationListStub]()},
	{reflect.TypeFor[structs.Evaluation](), reflect.TypeFor[api.Evaluation]()},
	{reflect.TypeFor[structs.Deployment](), reflect.TypeFor[api.Deployment]()},
	{reflect.TypeFor[structs.Node](), reflect.TypeFor[api.Node]()},
	{reflect.TypeFor[structs.JobSummary](), reflect.TypeFor[api.JobSummary]()},
	{reflect.TypeFor[structs.JobDiff](), reflect.TypeFor[api.JobDiff]()},
	{reflect.TypeFor[structs.PlanAnnotations](), reflect.TypeFor[api.PlanAnnotations]()},
}

// TestEveryStructsFieldHasAnAPIField guards against silent loss: a field
// added to a structs type without an api field of the same name would be
// dropped by copyByName.
func TestEveryStructsFieldHasAnAPIField(t *testing.T) {
	seen := map[[2]reflect.Type]bool{}
	var walk func(s, a reflect.Type)
	walk = func(s, a reflect.Type) {
		s, a = elemType(s), elemType(a)
		if s.Kind() != reflect.Struct || a.Kind() != reflect.Struct || !hasExportedFields(s) || seen[[2]reflect.Type{s, a}] {
			return
		}
		seen[[2]reflect.Type{s, a}] = true
		for i := range s.NumField() {
			f := s.Field(i)
			if !f.IsExported() {
				continue
			}
			af, ok := a.FieldByName(f.Name)
			if !ok {
				if !structsOnlyFields[s.Name()+"."+f.Name] && !(s.Name() == "Allocation" && a.Name() == "AllocationListStub") {
					t.Errorf("structs.%s.%s has no field in api.%s", s.Name(), f.Name, a.Name())
				}
				continue
			}
			walk(f.Type, af.Type)
		}
	}
	for _, p := range convertedPairs {
		walk(p.s, p.a)
	}
	assert.Greater(t, len(seen), 30, "the walk reaches the nested types")
}

// elemType strips pointers, slices and maps down to the element type.
func elemType(t reflect.Type) reflect.Type {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map:
			t = t.Elem()
		default:
			return t
		}
	}
}

// filled is a *T with every exported field set (testutil/fill).
func filled[T any]() *T { return fill.New[T](fill.Options{}) }

// assertSameByName checks that every exported field of s reached through
// structs types has the same value in a (matched by name, pointers followed).
func assertSameByName(t *testing.T, s, a reflect.Value, path string) {
	t.Helper()
	s, a = derefValue(s), derefValue(a)
	if !s.IsValid() {
		return
	}
	require.True(t, a.IsValid(), "%s: missing in api value", path)
	switch s.Kind() {
	case reflect.Struct:
		if !hasExportedFields(s.Type()) {
			assert.Equal(t, s.Interface(), a.Interface(), path)
			return
		}
		for i := range s.NumField() {
			f := s.Type().Field(i)
			if !f.IsExported() || structsOnlyFields[s.Type().Name()+"."+f.Name] {
				continue
			}
			if af := a.FieldByName(f.Name); af.IsValid() {
				assertSameByName(t, s.Field(i), af, path+"."+f.Name)
			}
		}
	case reflect.Slice:
		require.Equal(t, s.Len(), a.Len(), path)
		for i := range s.Len() {
			assertSameByName(t, s.Index(i), a.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		require.Equal(t, s.Len(), a.Len(), path)
		iter := s.MapRange()
		for iter.Next() {
			av := a.MapIndex(iter.Key())
			require.True(t, av.IsValid(), "%s[%v] missing", path, iter.Key())
			assertSameByName(t, iter.Value(), av, fmt.Sprintf("%s[%v]", path, iter.Key()))
		}
	default:
		switch {
		case s.CanInt() && a.CanUint():
			assert.Equal(t, uint64(s.Int()), a.Uint(), path)
		case s.Kind() == reflect.String && a.Kind() == reflect.String:
			assert.Equal(t, s.String(), a.String(), path) // named string types (api.DrainStatus)
		default:
			assert.Equal(t, s.Interface(), a.Interface(), path)
		}
	}
}

func derefValue(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}

func TestToAPI_EveryFieldSurvives(t *testing.T) {
	t.Run("job", func(t *testing.T) {
		j := filled[structs.Job]()
		j.PayloadEncoding = "" // a raw payload passes through unchanged
		assertSameByName(t, reflect.ValueOf(j), reflect.ValueOf(JobToAPI(j)), "Job")
	})
	t.Run("allocation", func(t *testing.T) {
		a := filled[structs.Allocation]()
		a.Job.PayloadEncoding = ""
		out := AllocToAPI(a)
		assertSameByName(t, reflect.ValueOf(a), reflect.ValueOf(out), "Allocation")
		assert.Equal(t, a.Job.Version, *out.Job.Version)
	})
	t.Run("allocation stub", func(t *testing.T) {
		a := filled[structs.Allocation]()
		a.AllocatedResources = nil // not part of the stub
		stub := AllocStubToAPI(a)
		assertSameByName(t, reflect.ValueOf(a), reflect.ValueOf(stub), "AllocationListStub")
		assert.Equal(t, a.JobVersion, stub.JobVersion)
		assert.Equal(t, a.Job.Type, stub.JobType)
	})
	t.Run("evaluation", func(t *testing.T) {
		e := filled[structs.Evaluation]()
		assertSameByName(t, reflect.ValueOf(e), reflect.ValueOf(EvalToAPI(e)), "Evaluation")
	})
	t.Run("deployment", func(t *testing.T) {
		d := filled[structs.Deployment]()
		assertSameByName(t, reflect.ValueOf(d), reflect.ValueOf(DeploymentToAPI(d)), "Deployment")
	})
	t.Run("node", func(t *testing.T) {
		n := filled[structs.Node]()
		assertSameByName(t, reflect.ValueOf(n), reflect.ValueOf(NodeToAPI(n)), "Node")
	})
	t.Run("job summary", func(t *testing.T) {
		s := filled[structs.JobSummary]()
		assertSameByName(t, reflect.ValueOf(s), reflect.ValueOf(JobSummaryToAPI(s)), "JobSummary")
	})
	t.Run("job diff", func(t *testing.T) {
		d := filled[structs.JobDiff]()
		assertSameByName(t, reflect.ValueOf(d), reflect.ValueOf(JobDiffToAPI(d)), "JobDiff")
	})
	t.Run("plan annotations", func(t *testing.T) {
		p := filled[structs.PlanAnnotations]()
		assertSameByName(t, reflect.ValueOf(p), reflect.ValueOf(PlanAnnotationsToAPI(p)), "PlanAnnotations")
	})
}

// TestJobRoundTrip_EveryField: a job with every field set survives
// structs → api → structs unchanged, through api.Job.Canonicalize.
func TestJobRoundTrip_EveryField(t *testing.T) {
	j := filled[structs.Job]()
	j.PayloadEncoding = ""            // see TestJobToAPI_DecodesPayload
	for _, tg := range j.TaskGroups { // a provider Drover lacks is refused
		for _, s := range tg.Services {
			s.Provider = ServiceProviderNomad
		}
		for _, t := range tg.Tasks {
			for _, s := range t.Services {
				s.Provider = ServiceProviderNomad
			}
			for _, tm := range t.Templates { // api canonicalizes signal names upper-case
				tm.ChangeSignal = strings.ToUpper(tm.ChangeSignal)
			}
		}
	}
	back, _, err := JobFromAPI(JobToAPI(j))
	require.NoError(t, err)
	assert.Equal(t, j, back)
}

func TestJobToAPI_DecodesPayload(t *testing.T) {
	raw := []byte(strings.Repeat("payload line\n", 400))
	packed, err := structs.CompressPayload(raw)
	require.NoError(t, err)
	require.Less(t, len(packed), len(raw)/10, "stored compressed")
	j := &structs.Job{ID: "child", Payload: packed, PayloadEncoding: structs.PayloadEncodingDeflate}
	assert.Equal(t, raw, JobToAPI(j).Payload, "returned as dispatched")
	alloc := &structs.Allocation{ID: "a", Job: j}
	assert.Equal(t, raw, AllocToAPI(alloc).Job.Payload, "clients get it as dispatched")
	assert.Equal(t, packed, j.Payload, "the stored form is untouched")

	j.Payload = []byte("not deflate")
	assert.Nil(t, JobToAPI(j).Payload, "an undecodable stored form is not passed off as the payload")
}

func TestNodeRoundTrip_EveryField(t *testing.T) {
	n := filled[structs.Node]()
	back := NodeFromAPI(NodeToAPI(n))
	n.SecretID = ""
	for _, v := range n.HostVolumes {
		v.Namespace = "" // server-set, not sent
	}
	// Not in api.NodeResources: the client sends them beside the node
	// (wire.NodeRegisterRequest.NodeNetworks).
	n.NodeResources.NodeNetworks = nil
	assert.Equal(t, n, back)
}

func TestToAPI_SharesNothing(t *testing.T) {
	j := filled[structs.Job]()
	out := JobToAPI(j)
	out.TaskGroups[0].Tasks[0].Config["added"] = 1
	out.TaskGroups[0].Meta["added"] = "1"
	out.Datacenters[0] = "changed"
	assert.NotContains(t, j.TaskGroups[0].Tasks[0].Config, "added")
	assert.NotContains(t, j.TaskGroups[0].Meta, "added")
	assert.NotEqual(t, "changed", j.Datacenters[0])
}

func TestNilInputs(t *testing.T) {
	assert.Nil(t, JobToAPI(nil))
	assert.Nil(t, AllocToAPI(nil))
	assert.Nil(t, AllocStubToAPI(nil))
	assert.Nil(t, EvalToAPI(nil))
	assert.Nil(t, DeploymentToAPI(nil))
	assert.Nil(t, NodeToAPI(nil))
	assert.Nil(t, NodeFromAPI(nil))
	assert.Nil(t, NodeStubToAPI(nil))
	assert.Nil(t, JobStubToAPI(nil, nil))
	assert.Nil(t, JobSummaryToAPI(nil))
	assert.Nil(t, JobDiffToAPI(nil))
	assert.Nil(t, PlanAnnotationsToAPI(nil))
	_, _, err := JobFromAPI(nil)
	assert.Error(t, err)
}

func TestCopyByName_ShapeMismatchPanics(t *testing.T) {
	type from struct{ A []string }
	type to struct{ A string }
	assert.PanicsWithValue(t, "convert: to.A: cannot copy []string into string", func() {
		convertInto[to](&from{A: []string{"x"}})
	})
}

func TestJobFromAPIKeepsOnlyExplicitStagger(t *testing.T) {
	mk := func() *api.Job {
		job := api.NewSystemJob("web", "web", "global", 50)
		task := api.NewTask("t", "raw_exec").SetConfig("command", "/bin/true")
		job.AddTaskGroup(api.NewTaskGroup("a", 1).AddTask(task))
		job.AddTaskGroup(api.NewTaskGroup("b", 1).AddTask(task))
		return job
	}
	job, _, err := JobFromAPI(mk())
	require.NoError(t, err)
	for _, tg := range job.TaskGroups {
		require.NotNil(t, tg.Update, "system jobs get the default update block")
		require.Zero(t, tg.Update.Stagger, "the defaulted stagger is not honoured")
	}

	withGroup := mk()
	withGroup.TaskGroups[1].Update = &api.UpdateStrategy{Stagger: new(5 * time.Second)}
	job, _, err = JobFromAPI(withGroup)
	require.NoError(t, err)
	require.Zero(t, job.LookupTaskGroup("a").Update.Stagger)
	require.Equal(t, 5*time.Second, job.LookupTaskGroup("b").Update.Stagger)

	withJob := mk()
	withJob.Update = &api.UpdateStrategy{Stagger: new(7 * time.Second)}
	job, _, err = JobFromAPI(withJob)
	require.NoError(t, err)
	require.Equal(t, 7*time.Second, job.LookupTaskGroup("a").Update.Stagger)
	require.Equal(t, 7*time.Second, job.Update.Stagger)
}
