package jobspec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

func TestJSON_Forms(t *testing.T) {
	cases := []struct{ name, src string }{
		{"wrapped", `{"Job": {"ID": "web", "Type": "system", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec"}]}]}}`},
		{"bare", `{"ID": "web", "Type": "system", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec"}]}]}`},
		{"unknown fields ignored", `{"Job": {"ID": "web", "Type": "system", "Bogus": 1, "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec"}]}]}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job, err := Parse("job.json", []byte(tc.src), Options{})
			require.NoError(t, err)
			require.Equal(t, "web", *job.ID)
			require.Equal(t, "system", *job.Type)
			require.Equal(t, "raw_exec", job.TaskGroups[0].Tasks[0].Driver)
		})
	}
}

func TestJSON_Errors(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"syntax", "{\n  \"Job\": {\n    \"ID\": ,\n  }\n}", "job.json:3,11-11: Invalid JSON job; invalid character ','"},
		{"type", "{\"Job\": {\n\"Priority\": \"high\"}}", "job.json:2,18-18: Invalid JSON job; json: cannot unmarshal string"},
		{"null job", `{"Job": null}`, `job.json: "Job" is null`},
		{"not an object", `[1]`, "job.json:1,"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("job.json", []byte(tc.src), Options{})
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestJSON_RoundTrip: an HCL job printed as {"Job": ...} JSON parses back to
// the same job (what `job run -output` followed by `job run x.json` does).
func TestJSON_RoundTrip(t *testing.T) {
	job, err := ParseFile(filepath.Join("testdata", "web.nomad.hcl"), Options{})
	require.NoError(t, err)
	b, err := json.Marshal(map[string]*api.Job{"Job": job})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "web.JSON")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	back, err := ParseFile(path, Options{})
	require.NoError(t, err)

	// Config numbers come back as float64 from JSON; compare via JSON.
	want, err := json.Marshal(job)
	require.NoError(t, err)
	got, err := json.Marshal(back)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
}

func TestJSON_StdinSniffing(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	_, err = w.WriteString(` {"Job": {"ID": "piped"}}`)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	old := os.Stdin
	os.Stdin = r
	t.Cleanup(func() { os.Stdin = old })

	job, err := ParseFile("-", Options{})
	require.NoError(t, err)
	require.Equal(t, "piped", *job.ID)
}
