package allocrunner

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/allocrunner/health"
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
