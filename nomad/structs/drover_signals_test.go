package structs

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseRolloutConditions(t *testing.T) {
	for _, c := range []struct {
		in    string
		want  []RolloutCondition
		probs []string // substrings, in order
	}{
		{in: "restarts>2", want: []RolloutCondition{{Signal: SignalRestarts, Threshold: 2}}},
		{in: " restarts > 2 , oom>0,pull_failures>=1, unhealthy>1 ", want: []RolloutCondition{
			{Signal: SignalRestarts, Threshold: 2}, {Signal: SignalOOM}, {Signal: SignalPullFailures, OrEqual: true, Threshold: 1}, {Signal: SignalUnhealthy, Threshold: 1},
		}},
		{in: "crashes>2", probs: []string{`condition "crashes>2": unknown signal "crashes" (known: restarts, oom, pull_failures, unhealthy)`}},
		{in: "restarts<2", probs: []string{`condition "restarts<2": operator "<" not supported (want > or >=)`}},
		{in: "restarts==2", probs: []string{`operator "==" not supported`}},
		{in: "restarts2", probs: []string{`condition "restarts2": no operator`}},
		{in: "restarts>two", probs: []string{`condition "restarts>two": threshold "two" is not a non-negative integer`}},
		{in: "restarts>-1", probs: []string{`threshold "-1" is not a non-negative integer`}},
		{in: "restarts>1.5", probs: []string{`threshold "1.5" is not`}},
		{in: "oom>=0", probs: []string{`condition "oom>=0": always holds`}},
		{in: "restarts>1,restarts>3", want: []RolloutCondition{{Signal: SignalRestarts, Threshold: 1}}, probs: []string{"signal restarts given twice"}},
		{in: "restarts>1,", want: []RolloutCondition{{Signal: SignalRestarts, Threshold: 1}}, probs: []string{"empty condition"}},
		{in: "", probs: []string{"empty condition"}},
	} {
		got, probs := ParseRolloutConditions(c.in)
		require.Equal(t, c.want, got, c.in)
		require.Len(t, probs, len(c.probs), "%q: %v", c.in, probs)
		for i, p := range c.probs {
			require.Contains(t, probs[i], p, c.in)
		}
	}
	require.Equal(t, "pull_failures>=1", RolloutCondition{Signal: SignalPullFailures, OrEqual: true, Threshold: 1}.String())
}

// TestRolloutMetaValidation: the keys are checked at registration, the
// error naming the key and the bad condition; only groups with a
// deployment may use them.
func TestRolloutMetaValidation(t *testing.T) {
	for _, c := range []struct {
		name    string
		mutate  func(j *Job)
		wantErr string // "" valid
	}{
		{name: "valid", mutate: func(j *Job) {
			j.TaskGroups[0].Meta = map[string]string{DroverMetaAutoPauseOn: "restarts>2,oom>0", DroverMetaAutoFailOn: "unhealthy>1"}
		}},
		{name: "bad condition", mutate: func(j *Job) {
			j.TaskGroups[0].Meta = map[string]string{DroverMetaAutoFailOn: "restarts>2,crashes>0"}
		}, wantErr: `meta "drover.auto_fail_on": condition "crashes>0": unknown signal "crashes"`},
		{name: "bad operator", mutate: func(j *Job) {
			j.TaskGroups[0].Meta = map[string]string{DroverMetaAutoPauseOn: "restarts<2"}
		}, wantErr: `meta "drover.auto_pause_on": condition "restarts<2": operator "<" not supported`},
		{name: "batch job", mutate: func(j *Job) {
			j.Type = JobTypeBatch
			j.TaskGroups[0].Meta = map[string]string{DroverMetaAutoPauseOn: "restarts>2"}
		}, wantErr: `meta "drover.auto_pause_on": only service and system jobs have deployments`},
		{name: "no deployment", mutate: func(j *Job) {
			j.TaskGroups[0].Update.MaxParallel = 0
			j.TaskGroups[0].Update.Canary = 0
			j.TaskGroups[0].Meta = map[string]string{DroverMetaAutoPauseOn: "restarts>2"}
		}, wantErr: `meta "drover.auto_pause_on": the group has no deployment`},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := testJob()
			c.mutate(j)
			err := j.Validate()
			if c.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), c.wantErr)
		})
	}
}

func TestAllocRolloutSignals(t *testing.T) {
	term := func(oom bool) *TaskEvent {
		e := &TaskEvent{Type: taskEventTerminated, Details: map[string]string{"exit_code": "137"}}
		if oom {
			e.Details[taskDetailOOMKilled] = "true"
		}
		return e
	}
	pull := &TaskEvent{Type: taskEventDriverFailure, DriverError: `failed to prepare task: failed to pull image "r/web:v2": manifest unknown`}
	otherDriver := &TaskEvent{Type: taskEventDriverFailure, DriverError: "failed to start: exec format error"}
	bad, good := false, true
	for _, c := range []struct {
		name  string
		alloc *Allocation
		want  map[string]int
	}{
		{name: "fresh", alloc: &Allocation{}, want: map[string]int{}},
		{name: "restarts summed over tasks", alloc: &Allocation{TaskStates: map[string]*TaskState{
			"a": {Restarts: 2}, "b": {Restarts: 3}, "c": nil,
		}}, want: map[string]int{SignalRestarts: 5}},
		{name: "oom and pull events", alloc: &Allocation{TaskStates: map[string]*TaskState{
			"a": {Restarts: 1, Events: []*TaskEvent{term(true), term(false), nil, term(true)}},
			"b": {Events: []*TaskEvent{pull, otherDriver, pull}},
		}}, want: map[string]int{SignalRestarts: 1, SignalOOM: 2, SignalPullFailures: 2}},
		{name: "unhealthy", alloc: &Allocation{DesiredStatus: AllocDesiredStatusRun, DeploymentStatus: &AllocDeploymentStatus{Healthy: &bad}},
			want: map[string]int{SignalUnhealthy: 1}},
		{name: "healthy", alloc: &Allocation{DeploymentStatus: &AllocDeploymentStatus{Healthy: &good}}, want: map[string]int{}},
		{name: "unhealthy after the server stopped it", alloc: &Allocation{DesiredStatus: AllocDesiredStatusStop, DeploymentStatus: &AllocDeploymentStatus{Healthy: &bad}},
			want: map[string]int{}},
	} {
		require.Equal(t, c.want, AllocRolloutSignals(c.alloc), c.name)
	}
	got := GroupRolloutSignals(&Deployment{CreateIndex: 10}, []*Allocation{
		{CreateIndex: 10, TaskGroup: "web", TaskStates: map[string]*TaskState{"a": {Restarts: 2}}},
		{CreateIndex: 12, TaskGroup: "web", TaskStates: map[string]*TaskState{"a": {Restarts: 1}}},
		{CreateIndex: 11, TaskGroup: "api", TaskStates: map[string]*TaskState{"a": {Events: []*TaskEvent{pull}}}},
		{CreateIndex: 11, TaskGroup: "db"},
		// Updated in place into the deployment: its restarts are the
		// earlier version's.
		{CreateIndex: 9, TaskGroup: "web", TaskStates: map[string]*TaskState{"a": {Restarts: 5}}},
	})
	require.Equal(t, map[string]map[string]int{"web": {SignalRestarts: 3}, "api": {SignalPullFailures: 1}}, got)
}
