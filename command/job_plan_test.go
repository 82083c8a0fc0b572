package command

import (
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/assert"
)

func editedPlan() *api.JobPlanResponse {
	return &api.JobPlanResponse{
		JobModifyIndex: 7,
		Diff: &api.JobDiff{Type: diffEdited, ID: "web", TaskGroups: []*api.TaskGroupDiff{{
			Type: diffEdited, Name: "web",
			Updates: map[string]uint64{"create/destroy update": 1, "ignore": 2},
			Tasks: []*api.TaskDiff{{
				Type: diffEdited, Name: "web", Annotations: []string{"forces create/destroy update"},
				Objects: []*api.ObjectDiff{{Type: diffEdited, Name: "Config", Fields: []*api.FieldDiff{
					{Type: diffEdited, Name: "image", Old: "nginx:1", New: "nginx:2"},
					{Type: diffNone, Name: "ports[0]", Old: "http", New: "http"},
				}}},
			}},
		}}},
		Annotations: &api.PlanAnnotations{DesiredTGUpdates: map[string]*api.DesiredUpdates{
			"web": {DestructiveUpdate: 1, Ignore: 2},
		}},
	}
}

func TestJobPlan_ExitCodes(t *testing.T) {
	cases := []struct {
		name string
		resp *api.JobPlanResponse
		err  bool
		want int
	}{
		{name: "no change", want: 0, resp: &api.JobPlanResponse{
			Diff:        &api.JobDiff{Type: diffNone, ID: "web"},
			Annotations: &api.PlanAnnotations{DesiredTGUpdates: map[string]*api.DesiredUpdates{"web": {Ignore: 3}}},
		}},
		{name: "in-place only", want: 0, resp: &api.JobPlanResponse{
			Diff:        &api.JobDiff{Type: diffEdited, ID: "web"},
			Annotations: &api.PlanAnnotations{DesiredTGUpdates: map[string]*api.DesiredUpdates{"web": {InPlaceUpdate: 3}}},
		}},
		{name: "destructive", want: 1, resp: editedPlan()},
		{name: "server error", want: 255, err: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t)
			f.planResp, f.planErr = tc.resp, tc.err
			code, out, errOut := runCmd("job", "plan", "-json", writeJobFile(t, "web"))
			assert.Equal(t, tc.want, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			if tc.err {
				assert.Contains(t, errOut, "Error during plan: Unexpected response code: 500 (plan exploded)")
			}
		})
	}
}

func TestJobPlan_BadArgsExit255(t *testing.T) {
	newFakeServer(t)
	code, _, _ := runCmd("job", "plan")
	assert.Equal(t, 255, code)
	code, _, _ = runCmd("job", "plan", "-nope", "x")
	assert.Equal(t, 255, code)
}

func TestJobPlan_RendersDiffAndHint(t *testing.T) {
	f := newFakeServer(t)
	f.planResp = editedPlan()
	path := writeJobFile(t, "web")
	code, out, _ := runCmd("job", "plan", "-json", path)
	assert.Equal(t, 1, code)
	want := `+/- Job: "web"
+/- Task Group: "web" (1 create/destroy update, 2 ignore)
  +/- Task: "web" (forces create/destroy update)
    +/- Config {
      +/- image: "nginx:1" => "nginx:2"
        }

Scheduler dry-run:
- All tasks successfully allocated.
- Task Group "web": 1 create/destroy update, 2 ignore
`
	assert.True(t, strings.HasPrefix(out, want), "got:\n%s", out)
	assert.Contains(t, out, "Job Modify Index: 7\n")
	assert.Contains(t, out, "drover job run -check-index 7 -json "+path+"\n")
}

func TestFormatJobDiff_VerboseShowsUnchangedAndAligns(t *testing.T) {
	got := formatJobDiff(editedPlan().Diff, nil, true)
	assert.Contains(t, got, "      +/- image: \"nginx:1\" => \"nginx:2\"\n          ports[0]: \"http\"\n        }")
}

func TestFormatJobDiff_AddedJobUsesAnnotationCounts(t *testing.T) {
	d := &api.JobDiff{Type: diffAdded, ID: "web", TaskGroups: []*api.TaskGroupDiff{{
		Type: diffAdded, Name: "web",
		Tasks: []*api.TaskDiff{{Type: diffAdded, Name: "web", Annotations: []string{"forces create"}}},
	}}}
	ann := &api.PlanAnnotations{DesiredTGUpdates: map[string]*api.DesiredUpdates{"web": {Place: 3}}}
	want := "+ Job: \"web\"\n+ Task Group: \"web\" (3 create)\n  + Task: \"web\" (forces create)"
	assert.Equal(t, want, formatJobDiff(d, ann, false))
}

func TestFormatDryRun_Failures(t *testing.T) {
	resp := &api.JobPlanResponse{FailedTGAllocs: map[string]*api.AllocationMetric{
		"web": {NodesEvaluated: 1, NodesExhausted: 1},
	}}
	want := "Scheduler dry-run:\n- WARNING: Failed to place all allocations.\n" +
		"  Task Group \"web\" (failed to place 1 allocation):\n    * Resources exhausted on 1 node"
	assert.Equal(t, want, formatDryRun(resp, false))
}
