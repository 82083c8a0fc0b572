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
// them. extra_claims, which Drover does not sign yet, is refused.
func TestJobFromAPI_Identities(t *testing.T) {
	j := apiSystemJob(t)
	j.TaskGroups[0].Services[0].Provider = "nomad"
	task := j.TaskGroups[0].Tasks[0]
	task.Identities = []*api.WorkloadIdentity{
		{Env: true, File: true},
		{Name: "vault", Audience: []string{"vault.io"}, File: true, TTL: time.Hour, ChangeMode: "signal", ChangeSignal: "SIGHUP"},
	}
	job, warnings, err := JobFromAPI(j)
	require.NoError(t, err)
	require.NoError(t, job.Validate())
	require.Empty(t, warnings)
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

func TestJobFromAPI_ExtraClaimsRefused(t *testing.T) {
	j := apiSystemJob(t)
	j.TaskGroups[0].Tasks[0].Identities = []*api.WorkloadIdentity{{Name: "vault", Audience: []string{"vault.io"}, ExtraClaims: []string{"x"}}}
	_, _, err := JobFromAPI(j)
	require.ErrorContains(t, err, `group "proxy": task "envoy": extra_claims: extra claims are not signed into Drover's workload identities yet`)
}
