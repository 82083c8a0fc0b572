package agent

import (
	"net/http"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// diff_version diffs every version against the one named (what the UI's
// "compare any two versions" asks), and an unknown version is a 400.
func TestContractVersionsDiffVersion(t *testing.T) {
	ta := newTestAgent(t, t.TempDir())
	c := ta.client
	for _, args := range [][]string{{"a"}, {"b"}, {"c"}} {
		job := testJob("web")
		job.TaskGroups[0].Tasks[0].SetConfig("args", args)
		_, _, err := c.Jobs().Register(job, nil)
		require.NoError(t, err)
	}
	base := uint64(0)
	versions, diffs, _, err := c.Jobs().VersionsOpts("web", &api.VersionsOptions{Diffs: true, DiffVersion: &base}, nil)
	require.NoError(t, err)
	require.Len(t, versions, 3)
	require.Len(t, diffs, 3, "one diff per version, the base's own included")
	for i, v := range versions {
		args := diffs[i].TaskGroups
		if *v.Version == 0 {
			require.Equal(t, "None", diffs[i].Type, "the base against itself")
			continue
		}
		require.Equal(t, "Edited", diffs[i].Type)
		require.NotEmpty(t, args)
		f := args[0].Tasks[0].Objects[0].Fields[0]
		require.Equal(t, "a", f.Old, "version %d is diffed against version 0", *v.Version)
		require.Equal(t, map[uint64]string{1: "b", 2: "c"}[*v.Version], f.New)
	}

	resp, err := http.Get(c.Address() + "/v1/job/web/versions?diffs=true&diff_version=7")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	resp, err = http.Get(c.Address() + "/v1/job/web/versions?diffs=true&diff_version=x")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)

	// The root redirects to the UI, which every agent serves.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noFollow.Get(c.Address() + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusTemporaryRedirect, resp.StatusCode)
	require.Equal(t, "/ui/", resp.Header.Get("Location"))
	resp, err = http.Get(c.Address() + "/ui/jobs/web")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
