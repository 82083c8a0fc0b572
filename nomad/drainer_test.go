package nomad

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func TestDecideDrains(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	drainingNode := func(id string, deadline time.Time, ignoreSystem bool) *structs.Node {
		return &structs.Node{ID: id, Status: structs.NodeStatusReady, Drain: true,
			DrainStrategy: &structs.DrainStrategy{DrainSpec: structs.DrainSpec{IgnoreSystemJobs: ignoreSystem}, ForceDeadline: deadline}}
	}
	alloc := func(id, node, jobType, desired, client string) *structs.Allocation {
		return &structs.Allocation{ID: id, NodeID: node, Namespace: "default", JobID: "job-" + id,
			Job: &structs.Job{Type: jobType}, DesiredStatus: desired, ClientStatus: client}
	}
	const (
		run, stop             = structs.AllocDesiredStatusRun, structs.AllocDesiredStatusStop
		running, complete     = structs.AllocClientStatusRunning, structs.AllocClientStatusComplete
		service, batch, sys   = structs.JobTypeService, structs.JobTypeBatch, structs.JobTypeSystem
		sysbatch              = structs.JobTypeSysBatch
		future, past, noLimit = 1, -1, 0
	)
	at := func(which int) time.Time {
		switch which {
		case future:
			return now.Add(time.Hour)
		case past:
			return now
		}
		return time.Time{}
	}
	type want struct {
		complete   []drainDone
		stopSystem []string
		deadlined  []string // node IDs
		jobs       []string // job IDs of the first deadlined node
		wake       time.Time
	}
	for _, tc := range []struct {
		name     string
		deadline int
		ignore   bool
		down     bool
		allocs   []*structs.Allocation
		want     want
	}{
		{name: "nothing left: complete", deadline: future,
			allocs: []*structs.Allocation{alloc("s1", "n", service, stop, complete)},
			want:   want{complete: []drainDone{{NodeID: "n"}}}},
		{name: "system allocations wait while a service one runs", deadline: future,
			allocs: []*structs.Allocation{alloc("s1", "n", service, run, running), alloc("y1", "n", sys, run, running)},
			want:   want{wake: now.Add(time.Hour)}},
		{name: "a service allocation being stopped still holds system ones", deadline: noLimit,
			allocs: []*structs.Allocation{alloc("s1", "n", service, stop, running), alloc("y1", "n", sys, run, running)}},
		{name: "system and sysbatch allocations stop once the others are gone", deadline: future,
			allocs: []*structs.Allocation{alloc("s1", "n", service, stop, complete), alloc("y1", "n", sys, run, running),
				alloc("y2", "n", sysbatch, run, running), alloc("y3", "n", sys, stop, running)},
			want: want{stopSystem: []string{"y1", "y2"}, wake: now.Add(time.Hour)}},
		{name: "a system allocation still stopping holds the drain", deadline: future,
			allocs: []*structs.Allocation{alloc("y3", "n", sys, stop, running)},
			want:   want{wake: now.Add(time.Hour)}},
		{name: "ignore_system_jobs: system allocations stay and do not hold the drain", deadline: future, ignore: true,
			allocs: []*structs.Allocation{alloc("y1", "n", sys, run, running)},
			want:   want{complete: []drainDone{{NodeID: "n"}}}},
		{name: "ignore_system_jobs: not even at the deadline", deadline: past, ignore: true,
			allocs: []*structs.Allocation{alloc("b1", "n", batch, run, running), alloc("y1", "n", sys, run, running)},
			want:   want{deadlined: []string{"n"}, jobs: []string{"job-b1"}}},
		{name: "deadline: everything goes at once", deadline: past,
			allocs: []*structs.Allocation{alloc("b1", "n", batch, run, running), alloc("s1", "n", service, run, running),
				alloc("s2", "n", service, stop, running), alloc("y1", "n", sys, run, running)},
			want: want{stopSystem: []string{"y1"}, deadlined: []string{"n"}, jobs: []string{"job-b1", "job-s1"}}},
		{name: "deadline passed, only stopping allocations left: no evaluation", deadline: past,
			allocs: []*structs.Allocation{alloc("s2", "n", service, stop, running)}},
		{name: "deadline passed and everything finished: complete, deadline reached", deadline: past,
			allocs: []*structs.Allocation{alloc("s2", "n", service, stop, complete)},
			want:   want{complete: []drainDone{{NodeID: "n", DeadlineReached: true}}}},
		{name: "down node: a stopped allocation no longer holds the drain", deadline: noLimit, down: true,
			allocs: []*structs.Allocation{alloc("s2", "n", service, stop, running)},
			want:   want{complete: []drainDone{{NodeID: "n"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := drainingNode("n", at(tc.deadline), tc.ignore)
			if tc.down {
				n.Status = structs.NodeStatusDown
			}
			other := &structs.Node{ID: "other", Status: structs.NodeStatusReady}
			d, err := decideDrains(now, []*structs.Node{n, other}, func(id string) ([]*structs.Allocation, error) {
				if id == "n" {
					return tc.allocs, nil
				}
				return []*structs.Allocation{alloc("o1", "other", service, run, running)}, nil
			})
			require.NoError(t, err)
			require.Equal(t, tc.want.complete, d.Complete)
			var stopped []string
			for _, a := range d.StopSystem {
				stopped = append(stopped, a.ID)
			}
			require.Equal(t, tc.want.stopSystem, stopped)
			var nodes, jobs []string
			for _, dl := range d.Deadlined {
				nodes = append(nodes, dl.NodeID)
				require.Equal(t, n.DrainStrategy.ForceDeadline, dl.Deadline)
			}
			if len(d.Deadlined) > 0 {
				for _, j := range d.Deadlined[0].Jobs {
					jobs = append(jobs, j.ID)
				}
			}
			require.Equal(t, tc.want.deadlined, nodes)
			require.Equal(t, tc.want.jobs, jobs)
			require.Equal(t, tc.want.wake, d.WakeAt)
		})
	}
}

func TestDecideDrainsWakesAtTheEarliestDeadline(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var nodes []*structs.Node
	for i, d := range []time.Duration{3 * time.Hour, time.Hour, 2 * time.Hour, -time.Hour} {
		nodes = append(nodes, &structs.Node{ID: string(rune('a' + i)), Drain: true, Status: structs.NodeStatusReady,
			DrainStrategy: &structs.DrainStrategy{ForceDeadline: now.Add(d)}})
	}
	d, err := decideDrains(now, nodes, func(id string) ([]*structs.Allocation, error) {
		return []*structs.Allocation{{ID: id, JobID: id, Job: &structs.Job{Type: structs.JobTypeService},
			DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning}}, nil
	})
	require.NoError(t, err)
	require.Equal(t, now.Add(time.Hour), d.WakeAt)
	require.Len(t, d.Deadlined, 1)
	require.Equal(t, "d", d.Deadlined[0].NodeID)
}
