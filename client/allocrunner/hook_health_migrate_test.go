package allocrunner

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// migrateAlloc is a service allocation outside any deployment whose group
// has a migrate block (min_healthy_time 10s, healthy_deadline 1m).
func migrateAlloc(mode string) *structs.Allocation {
	job := newJob(structs.JobTypeService, mockTask("web", map[string]any{"run_for": "1h"}))
	job.TaskGroups[0].Migrate = &structs.MigrateStrategy{MaxParallel: 1, HealthCheck: mode,
		MinHealthyTime: 10 * time.Second, HealthyDeadline: time.Minute}
	return newAlloc(job)
}

// TestHealthOutsideDeploymentFollowsMigrateBlock: a service allocation no
// deployment tracks is healthy once its tasks ran for the migrate block's
// min_healthy_time (what a drain's next migration waits for).
func TestHealthOutsideDeploymentFollowsMigrateBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := migrateAlloc(structs.UpdateHealthCheckTaskStates)
		ar := h.runner(alloc)
		began := time.Now()
		go ar.Run()

		settle(10*time.Second - time.Millisecond)
		require.Empty(t, h.sentHealth(alloc.ID), "not healthy before the migrate block's min_healthy_time")
		settle(time.Millisecond)
		ds := h.decidedOnce(t, alloc.ID)
		require.True(t, ds.IsHealthy())
		require.Equal(t, began.Add(10*time.Second), ds.Timestamp)
		ar.Destroy()
	})
}

// TestHealthOutsideDeploymentMissesMigrateDeadline: checks that never pass
// make the allocation unhealthy at the migrate block's healthy_deadline.
func TestHealthOutsideDeploymentMissesMigrateDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := withCheck(migrateAlloc(structs.UpdateHealthCheckChecks))
		ar := h.runner(alloc)
		ar.healthHook.probe = passingFrom(time.Time{})
		began := time.Now()
		go ar.Run()
		settle(time.Minute - time.Millisecond)
		require.Empty(t, h.sentHealth(alloc.ID))
		settle(time.Millisecond)
		ds := h.decidedOnce(t, alloc.ID)
		require.True(t, ds.IsUnhealthy())
		require.Equal(t, began.Add(time.Minute), ds.Timestamp)
		ar.Destroy()
	})
}

func TestHealthNotTrackedOutsideDeploymentWithoutMigrateBlock(t *testing.T) {
	for name, mutate := range map[string]func(a *structs.Allocation){
		"service without migrate block": func(a *structs.Allocation) { a.Job.TaskGroups[0].Migrate = nil },
		"batch":                         func(a *structs.Allocation) { a.Job.Type = structs.JobTypeBatch },
	} {
		t.Run(name, func(t *testing.T) {
			a := migrateAlloc(structs.UpdateHealthCheckTaskStates)
			require.True(t, needsTracking(a))
			mutate(a)
			require.False(t, needsTracking(a))
		})
	}
}
