package apiconv

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestJobFromAPI_Identities: identity blocks convert into structs (the
// unnamed one becomes the default identity with Nomad's audience), fields
// Drover does not keep are warned about, and the round trip to api keeps
// them.
func TestJobFromAPI_Identities(t *testing.T) {
	j := apiSystemJob(t)
	task := j.TaskGroups[0].Tasks[0]
	task.Identities = []*api.WorkloadIdentity{
		{Env: true, File: true},
		{Name: "vault", Audience: []string{"vault.io"}, File: true, TTL: time.Hour, ChangeMode: "signal", ChangeSignal: "SIGHUP",
			ExtraClaims: []string{"x"}},
	}
	job, warnings, err := JobFromAPI(j)
	require.NoError(t, err)
	require.NoError(t, job.Validate())
	require.Contains(t, warnings, `group "proxy": task "envoy": extra_claims is not supported by Drover and was ignored`)
	st := job.TaskGroups[0].Tasks[0]
	require.Equal(t, &structs.WorkloadIdentity{Name: "default", Audience: []string{"nomadproject.io"}, Env: true, File: true}, st.Identity)
	require.Equal(t, []*structs.WorkloadIdentity{{Name: "vault", Audience: []string{"vault.io"}, File: true, TTL: time.Hour,
		ChangeMode: "signal", ChangeSignal: "SIGHUP"}}, st.Identities)

	back := JobToAPI(job).TaskGroups[0].Tasks[0]
	require.Equal(t, &api.WorkloadIdentity{Name: "default", Audience: []string{"nomadproject.io"}, Env: true, File: true}, back.Identity)
	require.Len(t, back.Identities, 1)
	require.Equal(t, "vault", back.Identities[0].Name)
	require.Equal(t, time.Hour, back.Identities[0].TTL)
}

// TestJobFromAPI_IdentityInvalid: bad identity input fails validation with
// a message naming the task and the field.
func TestJobFromAPI_IdentityInvalid(t *testing.T) {
	j := apiSystemJob(t)
	j.TaskGroups[0].Tasks[0].Identity = &api.WorkloadIdentity{ChangeMode: "explode"}
	job, _, err := JobFromAPI(j)
	require.NoError(t, err)
	err = job.Validate()
	require.ErrorContains(t, err, `task "envoy": identity: change_mode must be one of noop, restart or signal, got "explode"`)
}
