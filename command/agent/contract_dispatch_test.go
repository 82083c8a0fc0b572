package agent

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func parameterizedJob(id, payload string, required, optional []string) *api.Job {
	job := batchJob(id)
	job.Meta = map[string]string{"owner": "ops", "size": "small"}
	job.ParameterizedJob = &api.ParameterizedJobConfig{Payload: payload, MetaRequired: required, MetaOptional: optional}
	job.TaskGroups[0].Tasks[0].DispatchPayload = &api.DispatchPayloadConfig{File: "input/payload.txt"}
	return job
}

func TestContractDispatch(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")

	_, _, err := c.Jobs().Dispatch("render", nil, nil, "", nil)
	require.ErrorContains(t, err, "404")
	registerAndWait(t, c, batchJob("plain"))
	_, _, err = c.Jobs().Dispatch("plain", nil, nil, "", nil)
	require.ErrorContains(t, err, "Specified job is not a parameterized job")

	resp, _, err := c.Jobs().Register(parameterizedJob("render", "required", []string{"scene"}, []string{"size"}), nil)
	require.NoError(t, err)
	require.Empty(t, resp.EvalID, "a parameterized parent gets no evaluation")

	cases := map[string]struct {
		payload []byte
		meta    map[string]string
		want    string
	}{
		"payload missing":  {nil, map[string]string{"scene": "a"}, "Payload is not provided but required by parameterized job"},
		"payload too big":  {make([]byte, 16*1024+1), map[string]string{"scene": "a"}, "Payload exceeds maximum size; 16385 > 16384"},
		"meta unpermitted": {[]byte("x"), map[string]string{"scene": "a", "colour": "red", "angle": "9"}, "Dispatch provided unpermitted meta keys: [angle colour]"},
		"meta missing":     {[]byte("x"), map[string]string{"size": "big"}, "Dispatch did not provide required meta keys: [scene]"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := c.Jobs().Dispatch("render", tc.meta, tc.payload, "", nil)
			require.ErrorContains(t, err, "400")
			require.ErrorContains(t, err, tc.want)
		})
	}
	stubs, _, err := c.Jobs().List(&api.QueryOptions{Prefix: "render/"})
	require.NoError(t, err)
	require.Empty(t, stubs, "refused dispatches write nothing")

	// A payload of exactly the limit is accepted.
	payload := []byte(strings.Repeat("p", 16*1024))
	out, wm, err := c.Jobs().Dispatch("render", map[string]string{"scene": "castle", "size": "big"}, payload, "", nil)
	require.NoError(t, err)
	require.NotZero(t, wm.LastIndex)
	require.Regexp(t, regexp.MustCompile(`^render/dispatch-\d+-[0-9a-f]{8}$`), out.DispatchedJobID)
	require.NotZero(t, out.JobCreateIndex)
	eval := waitEvalComplete(t, c, out.EvalID)
	require.Equal(t, out.DispatchedJobID, eval.JobID)

	child, _, err := c.Jobs().Info(out.DispatchedJobID, nil)
	require.NoError(t, err)
	require.True(t, child.Dispatched)
	require.Equal(t, "render", *child.ParentID)
	require.Equal(t, payload, child.Payload)
	// The state store holds it compressed (DEFLATE); every read decodes it.
	stored, err := ta.Server().State().JobByID(nil, "default", out.DispatchedJobID)
	require.NoError(t, err)
	require.Equal(t, structs.PayloadEncodingDeflate, stored.PayloadEncoding)
	require.Less(t, len(stored.Payload), len(payload)/100)
	allocs0, _, err := c.Jobs().Allocations(out.DispatchedJobID, false, nil)
	require.NoError(t, err)
	require.Len(t, allocs0, 1)
	full, _, err := c.Allocations().Info(allocs0[0].ID, nil)
	require.NoError(t, err)
	require.Equal(t, payload, full.Job.Payload, "the client gets the payload as dispatched")
	require.Equal(t, map[string]string{"owner": "ops", "size": "big", "scene": "castle"}, child.Meta)
	require.False(t, child.IsParameterized(), "a dispatched child is not a template")
	allocs, _, err := c.Jobs().Allocations(out.DispatchedJobID, false, nil)
	require.NoError(t, err)
	require.Len(t, allocs, 1)

	parent, _, err := c.Jobs().Info("render", nil)
	require.NoError(t, err)
	require.Equal(t, "running", *parent.Status)
	list, _, err := c.Jobs().List(&api.QueryOptions{Prefix: "render"})
	require.NoError(t, err)
	require.True(t, list[0].ParameterizedJob)
	require.False(t, list[1].ParameterizedJob)

	// A forbidden payload, and an idempotency token that returns the live
	// child instead of making another.
	_, _, err = c.Jobs().Register(parameterizedJob("ping", "forbidden", nil, nil), nil)
	require.NoError(t, err)
	_, _, err = c.Jobs().Dispatch("ping", nil, []byte("x"), "", nil)
	require.ErrorContains(t, err, "Payload provided but forbidden by parameterized job")
	first, _, err := c.Jobs().Dispatch("ping", nil, nil, "", &api.WriteOptions{IdempotencyToken: "once"})
	require.NoError(t, err)
	again, _, err := c.Jobs().Dispatch("ping", nil, nil, "", &api.WriteOptions{IdempotencyToken: "once"})
	require.NoError(t, err)
	require.Equal(t, first.DispatchedJobID, again.DispatchedJobID)
	require.Empty(t, again.EvalID)
	other, _, err := c.Jobs().Dispatch("ping", nil, nil, "", &api.WriteOptions{IdempotencyToken: "twice"})
	require.NoError(t, err)
	require.NotEqual(t, first.DispatchedJobID, other.DispatchedJobID)

	// Registering a job with a payload is refused.
	withPayload := batchJob("sneaky")
	withPayload.Payload = []byte("x")
	_, _, err = c.Jobs().Register(withPayload, nil)
	require.ErrorContains(t, err, "Job can't be submitted with a payload, only dispatched")
}

func TestContractParameterizedValidation(t *testing.T) {
	ta := newTestAgent(t, "")
	job := parameterizedJob("bad", "sometimes", nil, nil)
	_, _, err := ta.client.Jobs().Register(job, nil)
	require.ErrorContains(t, err, `parameterized: Unknown payload requirement: "sometimes"`)
	job = parameterizedJob("escape", "optional", nil, nil)
	job.TaskGroups[0].Tasks[0].DispatchPayload.File = "../../etc/passwd"
	_, _, err = ta.client.Jobs().Register(job, nil)
	require.ErrorContains(t, err, `dispatch_payload: file "../../etc/passwd" escapes the task's local directory`)
	job = parameterizedJob("svc", "optional", nil, nil)
	job.Type = new("service")
	_, _, err = ta.client.Jobs().Register(job, nil)
	require.ErrorContains(t, err, `Parameterized job can only be used with "batch" or "sysbatch" scheduler`)
}
