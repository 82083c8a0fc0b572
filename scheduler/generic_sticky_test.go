package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestGeneric_StickyDiskPrefersPreviousNode: with ephemeral_disk sticky
// (or migrate), a replacement goes to its previous allocation's node when
// that node can take it, and wherever there is room when it cannot.
func TestGeneric_StickyDiskPrefersPreviousNode(t *testing.T) {
	sticky := &structs.EphemeralDisk{Sticky: true, SizeMB: 300}
	migrate := &structs.EphemeralDisk{Migrate: true, SizeMB: 300}
	plain := &structs.EphemeralDisk{SizeMB: 300}
	bigger := func(tg *structs.TaskGroup) {
		destructiveChange(tg)
		tg.Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 1024}
	}
	cases := []struct {
		name string
		disk *structs.EphemeralDisk
		// prevNode mutates the previous allocation's node after the first
		// placement; nil leaves it as it is.
		prevNode func(*structs.Node)
		update   func(tg *structs.TaskGroup) // the destructive update, unless fail
		fail     bool                        // the allocation fails instead (a reschedule)
		wantSame bool
	}{
		{name: "sticky update fits on its node", disk: sticky, update: destructiveChange, wantSame: true},
		{name: "migrate implies sticky", disk: migrate, update: destructiveChange, wantSame: true},
		{name: "sticky update too big for its node goes elsewhere", disk: sticky, update: bigger,
			prevNode: func(n *structs.Node) { n.NodeResources.Memory.MemoryMB = 512 }},
		{name: "sticky update, node no longer eligible", disk: sticky, update: destructiveChange, prevNode: ineligible},
		{name: "sticky update, node left the job's datacenters", disk: sticky, update: destructiveChange, prevNode: inDC("dc9")},
		{name: "sticky update, node fails the constraints", disk: sticky, update: func(tg *structs.TaskGroup) {
			destructiveChange(tg)
			tg.Constraints = []*structs.Constraint{{LTarget: "${attr.rack}", Operand: "=", RTarget: "r2"}}
		}},
		{name: "sticky reschedule stays on its node", disk: sticky, fail: true, wantSame: true},
		{name: "plain reschedule avoids the node it failed on", disk: plain, fail: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			// The first placement has one node to go to; the others join
			// after it.
			h.state.upsertNode(testNode("node-0", withAttr("rack", "r1")))
			job := serviceJob("web", 1)
			job.TaskGroups[0].EphemeralDisk = tc.disk
			h.state.upsertJob(job)
			h.process(job)
			live := h.state.liveAllocs("web")
			require.Len(t, live, 1)
			prev := live[0]
			require.Equal(t, "node-0", prev.NodeID)
			for i := 1; i < 4; i++ {
				h.state.upsertNode(testNode(fmt.Sprintf("node-%d", i), withAttr("rack", "r2")))
			}
			if tc.prevNode != nil {
				n := h.state.nodes["node-0"].Copy()
				tc.prevNode(n)
				h.state.upsertNode(n)
			}
			if tc.fail {
				failed := prev.Copy()
				failed.ClientStatus = structs.AllocClientStatusFailed
				failed.ModifyTime = h.now.Add(-time.Hour).UnixNano()
				h.state.upsertAlloc(failed)
				h.process(job)
			} else {
				next := nextVersion(job, tc.update)
				h.state.upsertJob(next)
				h.process(next)
			}

			live = h.state.liveAllocs("web")
			require.Len(t, live, 1)
			repl := live[0]
			require.Equal(t, prev.ID, repl.PreviousAllocation, "a replacement, not a fresh placement")
			if tc.wantSame {
				assert.Equal(t, prev.NodeID, repl.NodeID)
			} else {
				assert.NotEqual(t, prev.NodeID, repl.NodeID)
			}
		})
	}
}
