package chaos

import (
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

func TestDeploymentViolations(t *testing.T) {
	healthy := func(b bool) *api.AllocDeploymentStatus { return &api.AllocDeploymentStatus{Healthy: &b} }
	alloc := func(id, node string, v uint64, desired, client string, ds *api.AllocDeploymentStatus) *api.AllocationListStub {
		return &api.AllocationListStub{ID: id, NodeID: node, JobVersion: v, DesiredStatus: desired, ClientStatus: client, DeploymentStatus: ds}
	}
	dep := func(status string) *api.Deployment {
		return &api.Deployment{ID: "dep-1", JobID: "j", JobVersion: 2, Status: status}
	}
	nodes := []string{"node-a", "node-b"}
	cases := []struct {
		name   string
		d      *api.Deployment
		allocs []*api.AllocationListStub
		want   []string // substrings, one per violation, in order
	}{
		{"every node running healthy", dep("successful"), []*api.AllocationListStub{
			alloc("a2", "node-a", 2, "run", "running", healthy(true)),
			alloc("b2", "node-b", 2, "run", "running", healthy(true)),
			alloc("a1", "node-a", 1, "stop", "complete", healthy(true)),
		}, nil},
		{"a running deployment is not judged", dep("running"), []*api.AllocationListStub{
			alloc("a2", "node-a", 2, "run", "running", nil),
		}, nil},
		{"an allocation of the version failed", dep("successful"), []*api.AllocationListStub{
			alloc("a2", "node-a", 2, "run", "running", healthy(true)),
			alloc("b2", "node-b", 2, "run", "failed", healthy(false)),
		}, []string{"allocation b2 on node node-b is failed, healthy false", "node node-b runs no healthy allocation of v2"}},
		{"running but health never set", dep("successful"), []*api.AllocationListStub{
			alloc("a2", "node-a", 2, "run", "running", healthy(true)),
			alloc("b2", "node-b", 2, "run", "running", nil),
		}, []string{"allocation b2 on node node-b is running, healthy unset", "node node-b runs no healthy allocation of v2"}},
		{"a node still on the old version", dep("successful"), []*api.AllocationListStub{
			alloc("a2", "node-a", 2, "run", "running", healthy(true)),
			alloc("b1", "node-b", 1, "run", "running", healthy(true)),
		}, []string{"dep-1 (job j v2) is successful but node node-b runs no healthy allocation of v2 (it runs: b1 v1 running)"}},
		{"stopped allocations of the version are not judged", dep("successful"), []*api.AllocationListStub{
			alloc("a2", "node-a", 2, "run", "running", healthy(true)),
			alloc("b2", "node-b", 2, "run", "running", healthy(true)),
			alloc("b2x", "node-b", 2, "stop", "complete", nil),
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := DeploymentViolations(c.d, c.allocs, nodes)
			if len(got) != len(c.want) {
				t.Fatalf("got %d violations %q, want %d", len(got), got, len(c.want))
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) || !strings.Contains(got[i], "dep-1") {
					t.Errorf("violation %d = %q, want it to name dep-1 and say %q", i, got[i], w)
				}
			}
		})
	}
}
