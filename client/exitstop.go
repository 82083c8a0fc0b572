package client

import (
	"slices"
	"time"

	"github.com/drover-project/drover/client/allocrunner"
	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/nomad/structs"
)

// exitStopGrace is added to the longest kill_timeout to bound the stop of
// the allocations on exit: the drivers' removal of what the tasks leave
// (Docker containers) and the alloc directories' deletion.
const exitStopGrace = 5 * time.Second

// exitStopBound is how long Shutdown waits for allocs to stop when
// StopAllocsOnShutdown is set: the longest kill_timeout of their tasks
// (taskrunner.DefaultKillTimeout where unset) plus grace. Tasks are killed
// together, so the bound is the longest one, not the sum; shutdown delays
// are skipped on exit and do not count.
func exitStopBound(allocs []*structs.Allocation, grace time.Duration) time.Duration {
	longest := time.Duration(0)
	for _, a := range allocs {
		if a == nil || a.Job == nil {
			continue
		}
		tg := a.Job.LookupTaskGroup(a.TaskGroup)
		if tg == nil {
			continue
		}
		for _, t := range tg.Tasks {
			kt := t.KillTimeout
			if kt <= 0 {
				kt = taskrunner.DefaultKillTimeout
			}
			longest = max(longest, kt)
		}
	}
	return longest + grace
}

// stopAllocsForExit stops and destroys every runner's allocation (tasks
// killed with their kill_signal and kill_timeout, shutdown delays skipped;
// containers and alloc dirs removed), all at once, and waits for them up to
// exitStopBound. It returns the runners still stopping at the bound, which
// it logs by allocation ID and leaves.
func (c *Client) stopAllocsForExit(runners []*allocrunner.AllocRunner) []*allocrunner.AllocRunner {
	if len(runners) == 0 {
		return nil
	}
	allocs := make([]*structs.Allocation, len(runners))
	for i, ar := range runners {
		allocs[i] = ar.Alloc()
	}
	bound := exitStopBound(allocs, c.cfg.timing.exitGrace)
	start := time.Now()
	c.logger.Info("stopping allocations before exit: their state is not kept for a next start",
		"allocs", len(runners), "bound", bound)
	done := make(chan string, len(runners))
	pending := map[string]*allocrunner.AllocRunner{}
	for i, ar := range runners {
		id := allocs[i].ID
		pending[id] = ar
		ar.SkipShutdownDelays()
		go func() {
			ar.Destroy()
			done <- id
		}()
	}
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for len(pending) > 0 {
		select {
		case id := <-done:
			delete(pending, id)
			c.logger.Debug("allocation stopped before exit", "alloc_id", id)
		case <-timer.C:
			ids := make([]string, 0, len(pending))
			for id := range pending {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			stuck := make([]*allocrunner.AllocRunner, len(ids))
			for i, id := range ids {
				stuck[i] = pending[id]
			}
			c.logger.Warn("allocations still stopping at the bound; exiting without them: their tasks may be left running",
				"allocs", ids, "bound", bound)
			return stuck
		}
	}
	c.logger.Info("stopped allocations before exit", "allocs", len(runners), "took", time.Since(start).Round(time.Millisecond))
	return nil
}
