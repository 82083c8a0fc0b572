package scheduler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func withHostVolumes(vols map[string]*structs.ClientHostVolumeConfig) nodeOpt {
	return func(n *structs.Node) { n.HostVolumes = vols }
}

func rw(path string) *structs.ClientHostVolumeConfig {
	return &structs.ClientHostVolumeConfig{Path: path}
}
func ro(path string) *structs.ClientHostVolumeConfig {
	return &structs.ClientHostVolumeConfig{Path: path, ReadOnly: true}
}

func TestHostVolumesMet(t *testing.T) {
	node := testNode("a", withHostVolumes(map[string]*structs.ClientHostVolumeConfig{
		"data": rw("/srv/data"), "certs": ro("/srv/certs"), "db[0]": rw("/srv/db0"), "db[2]": rw("/srv/db2"),
		"dyn-default": {Path: "/hv/1", ID: "1", Namespace: "default"}, "dyn-other": {Path: "/hv/2", ID: "2", Namespace: "other"},
	}))
	group := func(vols map[string]*structs.VolumeRequest) *structs.TaskGroup {
		return &structs.TaskGroup{Name: "web", Volumes: vols}
	}
	host := func(src string, readOnly, perAlloc bool) *structs.VolumeRequest {
		return &structs.VolumeRequest{Type: structs.VolumeTypeHost, Source: src, ReadOnly: readOnly, PerAlloc: perAlloc}
	}
	cases := []struct {
		name     string
		vols     map[string]*structs.VolumeRequest
		index    int
		perAlloc bool
		want     bool
	}{
		{"no volumes", nil, 0, true, true},
		{"present read-write", map[string]*structs.VolumeRequest{"d": host("data", false, false)}, 0, true, true},
		{"present, asked read-only", map[string]*structs.VolumeRequest{"d": host("data", true, false)}, 0, true, true},
		{"missing", map[string]*structs.VolumeRequest{"d": host("logs", false, false)}, 0, true, false},
		{"one of two missing", map[string]*structs.VolumeRequest{"d": host("data", false, false), "l": host("logs", true, false)}, 0, true, false},
		{"read-only volume asked read-write", map[string]*structs.VolumeRequest{"c": host("certs", false, false)}, 0, true, false},
		{"read-only volume asked read-only", map[string]*structs.VolumeRequest{"c": host("certs", true, false)}, 0, true, true},
		{"per_alloc index 0", map[string]*structs.VolumeRequest{"db": host("db", false, true)}, 0, true, true},
		{"per_alloc index 1 missing", map[string]*structs.VolumeRequest{"db": host("db", false, true)}, 1, true, false},
		{"per_alloc index 2", map[string]*structs.VolumeRequest{"db": host("db", false, true)}, 2, true, true},
		{"per_alloc skipped", map[string]*structs.VolumeRequest{"db": host("db", false, true)}, 1, false, true},
		{"per_alloc never matches the bare source", map[string]*structs.VolumeRequest{"d": host("data", false, true)}, 0, true, false},
		{"dynamic volume of the job's namespace", map[string]*structs.VolumeRequest{"d": host("dyn-default", false, false)}, 0, true, true},
		{"dynamic volume of another namespace", map[string]*structs.VolumeRequest{"d": host("dyn-other", false, false)}, 0, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, HostVolumesMet(node, group(tc.vols), "default", tc.index, tc.perAlloc))
		})
	}
}

func hostVolumeJob(id string, count int, vols map[string]*structs.VolumeRequest) *structs.Job {
	job := serviceJob(id, count)
	job.TaskGroups[0].Volumes = vols
	return job
}

func TestGeneric_PlacesOnlyOnNodesWithTheHostVolume(t *testing.T) {
	cases := []struct {
		name       string
		vols       map[string]*structs.VolumeRequest
		count      int
		wantByNode map[string]int
		wantFailed int // allocations not placed
	}{
		{
			name:       "volume on one node",
			vols:       map[string]*structs.VolumeRequest{"data": {Name: "data", Type: "host", Source: "data"}},
			count:      3,
			wantByNode: map[string]int{"with-data": 3},
		},
		{
			name:       "no node has it",
			vols:       map[string]*structs.VolumeRequest{"logs": {Name: "logs", Type: "host", Source: "logs"}},
			count:      2,
			wantByNode: map[string]int{},
			wantFailed: 2,
		},
		{
			name:       "read-only volume asked read-write",
			vols:       map[string]*structs.VolumeRequest{"certs": {Name: "certs", Type: "host", Source: "certs"}},
			count:      1,
			wantByNode: map[string]int{},
			wantFailed: 1,
		},
		{
			name:       "read-only volume asked read-only",
			vols:       map[string]*structs.VolumeRequest{"certs": {Name: "certs", Type: "host", Source: "certs", ReadOnly: true}},
			count:      2,
			wantByNode: map[string]int{"with-certs": 2},
		},
		{
			name:       "per_alloc: each index on the node with its volume",
			vols:       map[string]*structs.VolumeRequest{"db": {Name: "db", Type: "host", Source: "db", PerAlloc: true}},
			count:      3,
			wantByNode: map[string]int{"with-data": 1, "with-certs": 1},
			wantFailed: 1, // db[2] is nowhere
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.state.upsertNode(testNode("with-data", withHostVolumes(map[string]*structs.ClientHostVolumeConfig{
				"data": rw("/srv/data"), "db[0]": rw("/srv/db0")})))
			h.state.upsertNode(testNode("with-certs", withHostVolumes(map[string]*structs.ClientHostVolumeConfig{
				"certs": ro("/srv/certs"), "db[1]": rw("/srv/db1")})))
			h.state.upsertNode(testNode("bare"))
			job := hostVolumeJob("web", tc.count, tc.vols)
			h.state.upsertJob(job)
			eval := h.process(job)
			assert.Equal(t, tc.wantByNode, liveByNode(h, "web"))
			if tc.wantFailed == 0 {
				assert.Empty(t, eval.FailedTGAllocs)
				return
			}
			require.Contains(t, eval.FailedTGAllocs, "web")
			m := eval.FailedTGAllocs["web"]
			assert.Equal(t, tc.wantFailed, m.CoalescedFailures+1)
			assert.Positive(t, m.ConstraintFiltered[ReasonMissingHostVolumes], "the failure says why: %v", m.ConstraintFiltered)
		})
	}
}

func TestGeneric_PerAllocPlacementNamesTheIndex(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("n0", withHostVolumes(map[string]*structs.ClientHostVolumeConfig{"db[0]": rw("/srv/db0")})))
	h.state.upsertNode(testNode("n1", withHostVolumes(map[string]*structs.ClientHostVolumeConfig{"db[1]": rw("/srv/db1")})))
	job := hostVolumeJob("web", 2, map[string]*structs.VolumeRequest{"db": {Name: "db", Type: "host", Source: "db", PerAlloc: true}})
	h.state.upsertJob(job)
	eval := h.process(job)
	assert.Empty(t, eval.FailedTGAllocs)
	byName := map[string]string{}
	for _, a := range h.state.liveAllocs("web") {
		byName[a.Name] = a.NodeID
	}
	assert.Equal(t, map[string]string{"web.web[0]": "n0", "web.web[1]": "n1"}, byName)
}

func TestSystem_SkipsNodesWithoutTheHostVolume(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("with", withHostVolumes(map[string]*structs.ClientHostVolumeConfig{"data": rw("/srv/data")})))
	h.state.upsertNode(testNode("without"))
	h.state.upsertNode(testNode("read-only", withHostVolumes(map[string]*structs.ClientHostVolumeConfig{"data": ro("/srv/data")})))
	job := testJob("sys")
	job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": {Name: "data", Type: "host", Source: "data"}}
	h.state.upsertJob(job)
	eval := h.process(job)
	assert.Equal(t, map[string]int{"with": 1}, liveByNode(h, "sys"))
	// As for constraints, a node filtered out is not a placement failure
	// of a system job.
	assert.Nil(t, eval.FailedTGAllocs)
}

func TestSystem_FilteredNodesNameMissingHostVolumes(t *testing.T) {
	job := testJob("sys")
	job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": {Name: "data", Type: "host", Source: "data"}}
	f := NewFeasibleFunc(job)
	ok, why := f(testNode("without"), job.TaskGroups[0])
	assert.False(t, ok)
	assert.Equal(t, ReasonMissingHostVolumes, why)
	ok, _ = f(testNode("with", withHostVolumes(map[string]*structs.ClientHostVolumeConfig{"data": rw("/srv/data")})), job.TaskGroups[0])
	assert.True(t, ok)
	// Per_alloc volumes of system jobs are index 0's.
	job.TaskGroups[0].Volumes["data"].PerAlloc = true
	f = NewFeasibleFunc(job)
	ok, _ = f(testNode("with", withHostVolumes(map[string]*structs.ClientHostVolumeConfig{"data": rw("/srv/data")})), job.TaskGroups[0])
	assert.False(t, ok)
	ok, _ = f(testNode("with0", withHostVolumes(map[string]*structs.ClientHostVolumeConfig{"data[0]": rw("/srv/data")})), job.TaskGroups[0])
	assert.True(t, ok)
}
