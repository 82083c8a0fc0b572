package client

import (
	"context"
	"sort"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// A client cut off from the servers stops, on its own, the allocations
// whose group has disconnect.stop_on_client_after (or the older
// stop_after_client_disconnect) once that long has passed since the last
// heartbeat the servers answered. The servers, meanwhile, have marked them
// lost and place their replacements after the same delay.

// disconnectCheckInterval is how often disconnectLoop checks the
// allocations while the servers do not answer.
const disconnectCheckInterval = time.Second

// disconnectStops returns the IDs (sorted) of allocs to stop at now, the
// servers having last answered at lastContact: those not server-stopped
// whose group's stop_on_client_after has passed since.
func disconnectStops(now, lastContact time.Time, allocs []*structs.Allocation) []string {
	silent := now.Sub(lastContact)
	var out []string
	for _, a := range allocs {
		if a == nil || a.Job == nil || a.ServerTerminal() {
			continue
		}
		if d := a.Job.LookupTaskGroup(a.TaskGroup).StopOnClientAfter(); d > 0 && silent >= d {
			out = append(out, a.ID)
		}
	}
	sort.Strings(out)
	return out
}

// noteContact records that the servers answered at now.
func (c *Client) noteContact(now time.Time) { c.lastContact.Store(now.UnixNano()) }

// disconnectLoop stops the allocations disconnectStops names, each once,
// until ctx ends.
func (c *Client) disconnectLoop(ctx context.Context) {
	t := time.NewTicker(disconnectCheckInterval)
	defer t.Stop()
	stopped := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := c.cfg.Now()
		last := time.Unix(0, c.lastContact.Load())
		if now.Sub(last) < disconnectCheckInterval {
			continue
		}
		c.allocsMu.Lock()
		var allocs []*structs.Allocation
		for id, e := range c.allocs {
			if e.runner != nil && !stopped[id] {
				allocs = append(allocs, e.runner.Alloc())
			}
		}
		c.allocsMu.Unlock()
		for _, id := range disconnectStops(now, last, allocs) {
			if ar := c.runner(id); ar != nil {
				c.logger.Warn("no contact with the servers for the group's stop_on_client_after; stopping the allocation",
					"alloc_id", id, "last_contact", last)
				stopped[id] = true
				ar.StopTasks()
			}
		}
	}
}
