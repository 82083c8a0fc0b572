package nodesim

import (
	"encoding/json"
	"testing"

	"github.com/hashicorp/nomad/api"

	protocol "github.com/drover-project/drover/wire"
)

// TestAllocQueryDecodesEachJobOnce: allocations of one job version share
// one decoded job; another encoding is decoded on its own; a missing job
// is nil; every other field decodes as api.Allocation's.
func TestAllocQueryDecodesEachJobOnce(t *testing.T) {
	job := func(version uint64) json.RawMessage {
		j := api.NewSystemJob("web", "web", "global", 50)
		j.Version = &version
		raw, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	body, err := json.Marshal([]map[string]any{
		{"ID": "a1", "AllocModifyIndex": 7, "Job": job(1)},
		{"ID": "a2", "AllocModifyIndex": 8, "Job": job(1)},
		{"ID": "a3", "Job": job(2)},
		{"ID": "a4", "Job": nil},
	})
	if err != nil {
		t.Fatal(err)
	}
	var wire []*protocol.NodeAlloc
	if err := json.Unmarshal(body, &wire); err != nil {
		t.Fatal(err)
	}
	var d jobDecoder
	jobs := make([]*api.Job, len(wire))
	for i, w := range wire {
		if jobs[i], err = d.decode(w.Job); err != nil {
			t.Fatal(err)
		}
	}
	if wire[0].ID != "a1" || wire[0].AllocModifyIndex != 7 || wire[1].AllocModifyIndex != 8 {
		t.Fatalf("allocation fields: %+v %+v", wire[0].Allocation, wire[1].Allocation)
	}
	if jobs[0] == nil || jobs[0] != jobs[1] {
		t.Fatalf("one job version must decode once and be shared: %p %p", jobs[0], jobs[1])
	}
	if jobs[2] == nil || jobs[2] == jobs[0] || *jobs[2].Version != 2 || *jobs[0].Version != 1 {
		t.Fatalf("another version must decode on its own: %+v", jobs[2])
	}
	if jobs[3] != nil {
		t.Fatalf("no job must decode as nil, got %+v", jobs[3])
	}
}
