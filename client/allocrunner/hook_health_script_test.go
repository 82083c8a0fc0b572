package allocrunner

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/allocrunner/health"
	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/nomad/structs"
)

// A check that warns keeps an allocation from being healthy (Nomad's
// on_update "require_healthy"), unless on_update is "ignore_warnings".
func TestWarningCheckAndIgnoreWarnings(t *testing.T) {
	warning := func(context.Context, health.CheckDef) health.Outcome {
		return health.Outcome{Warning: true, Output: "replica lagging"}
	}
	for _, tc := range []struct {
		onUpdate string
		healthy  bool
	}{
		{"", false},
		{structs.OnUpdateRequireHealthy, false},
		{structs.OnUpdateIgnoreWarnings, true},
	} {
		t.Run("on_update="+tc.onUpdate, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				alloc := withCheck(deploymentAlloc(newJob(structs.JobTypeSystem, mockTask("web", map[string]any{"run_for": "1h"})), structs.UpdateHealthCheckChecks))
				alloc.Job.TaskGroups[0].Services[0].Checks[0].OnUpdate = tc.onUpdate
				ar := h.runner(alloc)
				ar.healthHook.probe = warning
				began := time.Now()
				go ar.Run()

				settle(time.Minute)
				res := ar.CheckResults()
				require.Len(t, res, 1)
				require.Equal(t, health.StatusWarning, res[0].Status, "reported as a warning either way")
				ds := h.decidedOnce(t, alloc.ID)
				require.Equal(t, tc.healthy, ds.IsHealthy())
				if tc.healthy {
					require.Equal(t, began.Add(10*time.Second), ds.Timestamp, "after min_healthy_time")
				} else {
					require.Equal(t, began.Add(time.Minute), ds.Timestamp, "at healthy_deadline")
				}
				ar.Destroy()
			})
		})
	}
}

// check_restart of a group service check without a task restarts every
// task of the allocation, through the restart policy (none here: they
// fail), with Nomad's reason.
func TestGroupCheckRestartRestartsEveryTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		job := newJob(structs.JobTypeService, mockTask("web", map[string]any{"run_for": "1h"}), mockTask("sidecar", map[string]any{"run_for": "1h"}))
		alloc := withCheck(newAlloc(job))
		alloc.Job.TaskGroups[0].Services[0].CheckRestart = &structs.CheckRestart{Limit: 2, Grace: 3 * time.Second}
		ar := h.runner(alloc)
		ar.healthHook.probe = passingFrom(time.Time{}) // never passes; probes every 5s
		go ar.Run()

		settle(5*time.Second - time.Millisecond)
		require.Nil(t, findEvent(taskState(t, ar, "web"), "Restart Signaled"), "below the limit: the probe at 0s is within grace, the one at 5s counts")
		settle(5*time.Second + time.Millisecond) // probes at 5s and 10s count: limit reached at 10s
		for _, name := range []string{"web", "sidecar"} {
			st := taskState(t, ar, name)
			ev := findEvent(st, "Restart Signaled")
			require.NotNil(t, ev, "task %s: %v %+v", name, eventTypes(st), ar.CheckResults())
			require.Equal(t, `health check: check "alive" unhealthy`, ev.DisplayMessage)
			require.Equal(t, taskrunner.StateDead, st.State, "no restarts allowed: the task fails")
			require.True(t, st.Failed)
		}
		ar.Destroy()
	})
}
