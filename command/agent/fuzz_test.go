package agent

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// FuzzJobRegisterDecode feeds arbitrary bodies through the job-register
// decoding path (JSON → api.JobRegisterRequest → canonicalize → convert →
// validate). It must never panic, whatever the input.
func FuzzJobRegisterDecode(f *testing.F) {
	seed, _ := json.Marshal(&api.JobRegisterRequest{Job: testJob("web")})
	f.Add(seed)
	f.Add([]byte(`{"Job":{"ID":"x","Type":"system","TaskGroups":[{"Name":"g","Count":3,"Tasks":[{"Name":"t","Driver":"raw_exec","Config":{"command":"/bin/true","args":[1,{"a":null}]}}]}]}}`))
	f.Add([]byte(`{"Job":{"ID":"x","TaskGroups":[null],"Update":{"Canary":150}}}`))
	f.Add([]byte(`{"Job":{"TaskGroups":[{"Tasks":[null,{"Resources":{"Networks":[null]}}],"Networks":[{"DynamicPorts":[{"Label":""}]}]}]}}`))
	f.Add([]byte(`{"Job":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("PUT", "/v1/jobs", bytes.NewReader(body))
		var req api.JobRegisterRequest
		if err := decodeBody(r, &req); err != nil {
			return
		}
		job, _, err := jobFromRequest(r, req.Job, "global")
		if err != nil {
			return
		}
		_ = job.Validate()
	})
}
