package state

import (
	"errors"
	"testing"

	"github.com/google/uuid"
	"pgregory.net/rapid"

	"github.com/drover-project/drover/nomad/structs"
)

// TestProp_HealthCountsIncremental drives random sequences of allocation
// writes (server upserts that move allocations between deployments, client
// health reports, desired-status changes, plans carrying stale deployment
// copies with made-up counts, new deployments and new groups, manual
// health, deployment status changes, garbage collection, snapshot restore)
// and checks after every step that every active deployment's counts equal
// a full recount of its allocations, and that a terminal deployment's
// counts no longer change.
func TestProp_HealthCountsIncremental(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := NewStateStore()
		jobs := []*structs.Job{testJob("web"), testJob("api")}
		index := uint64(1)
		for _, j := range jobs {
			if err := s.UpsertJob(index, nil, j); err != nil {
				rt.Fatalf("upsert job: %v", err)
			}
			index++
		}
		var deps []*structs.Deployment // as first written (stale copies for plans)
		var ids []string
		groups := []string{"web", "db"}
		newDeployment := func() *structs.Deployment {
			d := testDeployment(jobs[rapid.IntRange(0, 1).Draw(rt, "djob")])
			d.TaskGroups["web"].HealthyAllocs = rapid.IntRange(0, 5).Draw(rt, "bogusH")
			if rapid.Bool().Draw(rt, "withDB") {
				d.TaskGroups["db"] = &structs.DeploymentState{DesiredTotal: 1, UnhealthyAllocs: 3}
			}
			return d
		}
		depID := func() string {
			if len(deps) == 0 || rapid.IntRange(0, 4).Draw(rt, "nodep") == 0 {
				return rapid.SampledFrom([]string{"", "unknown"}).Draw(rt, "depID")
			}
			return rapid.SampledFrom(deps).Draw(rt, "dep").ID
		}
		health := func() *structs.AllocDeploymentStatus {
			switch rapid.IntRange(0, 2).Draw(rt, "health") {
			case 0:
				return nil
			case 1:
				return &structs.AllocDeploymentStatus{}
			}
			h := rapid.Bool().Draw(rt, "healthy")
			return &structs.AllocDeploymentStatus{Healthy: &h}
		}
		newAlloc := func() *structs.Allocation {
			a := testAlloc(jobs[rapid.IntRange(0, 1).Draw(rt, "job")], "n1")
			a.ID = uuid.NewString()
			a.TaskGroup = rapid.SampledFrom(groups).Draw(rt, "group")
			a.DeploymentID = depID()
			a.DeploymentStatus = health()
			return a
		}
		pick := func() string { return rapid.SampledFrom(ids).Draw(rt, "alloc") }
		final := map[string]map[string][2]int{} // terminal deployment → group → counts

		steps := rapid.IntRange(1, 40).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			op := "plan"
			if len(ids) > 0 {
				op = rapid.SampledFrom([]string{"insert", "server", "client", "stop", "plan", "manual", "status", "gc", "restore"}).Draw(rt, "op")
			}
			var err error
			switch op {
			case "insert":
				var as []*structs.Allocation
				for k := rapid.IntRange(1, 4).Draw(rt, "n"); k > 0; k-- {
					as = append(as, newAlloc())
				}
				err = s.UpsertAllocs(index, as)
				for _, a := range as {
					ids = append(ids, a.ID)
				}
			case "server":
				a := mustAllocR(rt, s, pick()).Copy()
				a.Job = nil
				if rapid.Bool().Draw(rt, "move") {
					a.DeploymentID = depID()
				}
				a.DeploymentStatus = health()
				err = s.UpsertAllocs(index, []*structs.Allocation{a})
			case "client":
				u := &structs.Allocation{ID: pick(), DeploymentStatus: health(),
					ClientStatus: rapid.SampledFrom([]string{structs.AllocClientStatusRunning, structs.AllocClientStatusFailed, structs.AllocClientStatusComplete}).Draw(rt, "cs")}
				err = s.UpdateAllocsFromClient(index, []*structs.Allocation{u}, int64(index))
			case "stop":
				err = s.UpdateAllocsDesiredStatus(index, []string{pick()}, structs.AllocDesiredStatusStop, "stopped")
			case "plan":
				req := &structs.ApplyPlanResultsRequest{UpdatedAt: int64(index)}
				if len(deps) == 0 || rapid.Bool().Draw(rt, "newDep") {
					d := newDeployment()
					deps = append(deps, d)
					req.Deployment = d.Copy()
				} else {
					req.Deployment = rapid.SampledFrom(deps).Draw(rt, "planDep").Copy() // stale, bogus counts
					if rapid.Bool().Draw(rt, "addGroup") {
						req.Deployment.TaskGroups["db"] = &structs.DeploymentState{DesiredTotal: 1, HealthyAllocs: 7}
					}
				}
				if len(ids) > 0 && rapid.Bool().Draw(rt, "planStop") {
					stop := mustAllocR(rt, s, pick()).Copy()
					stop.DesiredStatus = structs.AllocDesiredStatusStop
					req.AllocsStopped = append(req.AllocsStopped, stop)
				}
				for k := rapid.IntRange(0, 3).Draw(rt, "placed"); k > 0; k-- {
					a := newAlloc()
					if rapid.Bool().Draw(rt, "ofPlanDep") {
						a.DeploymentID, a.JobID = req.Deployment.ID, req.Deployment.JobID
					}
					a.Job = nil
					req.AllocsUpdated = append(req.AllocsUpdated, a)
					ids = append(ids, a.ID)
				}
				if rapid.IntRange(0, 5).Draw(rt, "planFail") == 0 {
					req.DeploymentUpdates = []*structs.DeploymentStatusUpdate{{DeploymentID: req.Deployment.ID, Status: structs.DeploymentStatusFailed}}
				}
				err = s.UpsertPlanResults(index, req)
			case "manual":
				d := rapid.SampledFrom(deps).Draw(rt, "manualDep")
				req := &structs.DeploymentAllocHealthRequest{DeploymentID: d.ID, Timestamp: int64(index)}
				id := pick()
				if rapid.Bool().Draw(rt, "manualHealthy") {
					req.HealthyAllocationIDs = []string{id}
				} else {
					req.UnhealthyAllocationIDs = []string{id}
				}
				err = s.UpdateDeploymentAllocHealth(index, req)
				if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
					err = s.UpsertAllocs(index, nil) // keep the index moving
				}
			case "status":
				d := rapid.SampledFrom(deps).Draw(rt, "statusDep")
				st := rapid.SampledFrom([]string{structs.DeploymentStatusPaused, structs.DeploymentStatusRunning, structs.DeploymentStatusSuccessful}).Draw(rt, "status")
				err = s.UpdateDeploymentStatus(index, &structs.DeploymentStatusUpdate{DeploymentID: d.ID, Status: st}, int64(index))
				if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
					err = s.UpsertAllocs(index, nil)
				}
			case "gc":
				_, err = s.DeleteGC(index, &structs.GCRequest{Allocs: []string{pick(), pick()}})
				kept := ids[:0]
				for _, id := range ids {
					if a, _ := s.AllocByID(nil, id); a != nil {
						kept = append(kept, id)
					}
				}
				ids = kept
				if len(ids) == 0 {
					ids = nil
				}
			case "restore":
				s = snapshotRestoreR(rt, s)
				err = s.UpsertAllocs(index, nil)
			}
			if err != nil {
				rt.Fatalf("step %d %s: %v", i, op, err)
			}
			checkHealthCounts(rt, s, final, op)
			index++
		}
	})
}

// checkHealthCounts checks every stored deployment's counts against a full
// recount of its allocations (active) or its counts when it was first seen
// terminal (recorded in final).
func checkHealthCounts(rt *rapid.T, s *StateStore, final map[string]map[string][2]int, op string) {
	all, err := s.Allocs(nil)
	if err != nil {
		rt.Fatalf("allocs: %v", err)
	}
	ds, err := s.Deployments(nil, "*")
	if err != nil {
		rt.Fatalf("deployments: %v", err)
	}
	for _, d := range ds {
		got := map[string][2]int{}
		for name, st := range d.TaskGroups {
			got[name] = [2]int{st.HealthyAllocs, st.UnhealthyAllocs}
		}
		if !d.Active() {
			want, ok := final[d.ID]
			for name, c := range got {
				if w := want[name]; ok && c != w { // a group added later (a stale plan) counts nothing
					rt.Fatalf("after %s: terminal deployment %s counts %v, ended with %v", op, d.ID, got, want)
				}
			}
			if !ok {
				final[d.ID] = got
			}
			continue
		}
		want := map[string][2]int{}
		for name := range d.TaskGroups {
			want[name] = [2]int{}
		}
		for _, a := range all {
			if a.DeploymentID != d.ID || a.Namespace != d.Namespace || a.JobID != d.JobID {
				continue
			}
			c, ok := want[a.TaskGroup]
			if !ok {
				continue
			}
			switch {
			case countsHealthy(a):
				c[0]++
			case countsUnhealthy(a):
				c[1]++
			}
			want[a.TaskGroup] = c
		}
		if !equalCounts(got, want) {
			rt.Fatalf("after %s: deployment %s counts (healthy, unhealthy) %v, recount %v", op, d.ID, got, want)
		}
	}
}

func equalCounts(a, b map[string][2]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// snapshotRestoreR restores s's jobs, allocations and deployments into a
// new store, as the FSM restores a snapshot (the counts travel as fields of
// the deployments).
func snapshotRestoreR(rt *rapid.T, s *StateStore) *StateStore {
	r := NewStateStore()
	rs := r.Restore()
	for _, id := range []string{"web", "api"} {
		j, err := s.JobByID(nil, "default", id)
		if err != nil || j == nil {
			rt.Fatalf("job %s: %v", id, err)
		}
		if err := rs.JobRestore(j); err != nil {
			rt.Fatalf("restore job: %v", err)
		}
	}
	all, err := s.Allocs(nil)
	if err != nil {
		rt.Fatalf("allocs: %v", err)
	}
	for _, a := range all {
		c := a.Copy()
		c.Job = nil
		if err := rs.AllocRestore(c); err != nil {
			rt.Fatalf("restore alloc: %v", err)
		}
	}
	ds, err := s.Deployments(nil, "*")
	if err != nil {
		rt.Fatalf("deployments: %v", err)
	}
	for _, d := range ds {
		if err := rs.DeploymentRestore(d.Copy()); err != nil {
			rt.Fatalf("restore deployment: %v", err)
		}
	}
	if err := rs.Commit(); err != nil {
		rt.Fatalf("restore commit: %v", err)
	}
	return r
}
