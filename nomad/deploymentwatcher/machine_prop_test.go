package deploymentwatcher

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/nomad/structs"
)

// genDeployment draws a deployment of job with one or two groups, canaries
// or not, progress deadline or not.
func genDeployment(t *rapid.T, job *structs.Job) *structs.Deployment {
	d := testDeployment(job)
	d.TaskGroups = map[string]*structs.DeploymentState{}
	for _, name := range []string{"web", "api"}[:rapid.IntRange(1, 2).Draw(t, "groups")] {
		st := &structs.DeploymentState{
			DesiredTotal: rapid.IntRange(0, 3).Draw(t, name+".total"),
			AutoRevert:   rapid.Bool().Draw(t, name+".autoRevert"),
			AutoPromote:  rapid.Bool().Draw(t, name+".autoPromote"),
		}
		if rapid.Bool().Draw(t, name+".deadline") {
			st.ProgressDeadline = pd
			st.RequireProgressBy = at(pd)
		}
		if n := rapid.IntRange(0, 2).Draw(t, name+".canaries"); n > 0 {
			st.DesiredCanaries = n
			for i := 0; i < n; i++ {
				st.PlacedCanaries = append(st.PlacedCanaries, fmt.Sprintf("%s-%d", name, i))
			}
		}
		d.TaskGroups[name] = st
	}
	return d
}

// genObservation draws the deployment and its allocations as state could
// show them: health per allocation, counts derived from it, a status.
func genObservation(t *rapid.T, base *structs.Deployment, i int) AllocHealthChanged {
	d := base.Copy()
	d.Status = rapid.SampledFrom([]string{
		structs.DeploymentStatusRunning, structs.DeploymentStatusRunning, structs.DeploymentStatusRunning,
		structs.DeploymentStatusPaused, structs.DeploymentStatusPaused,
		structs.DeploymentStatusFailed, structs.DeploymentStatusCancelled, structs.DeploymentStatusSuccessful,
	}).Draw(t, fmt.Sprintf("obs%d.status", i))
	var allocs []*structs.Allocation
	for name, st := range d.TaskGroups {
		st.Promoted = st.DesiredCanaries > 0 && rapid.Bool().Draw(t, fmt.Sprintf("obs%d.%s.promoted", i, name))
		ids := append([]string(nil), st.PlacedCanaries...)
		for k := len(ids); k < 3; k++ {
			ids = append(ids, fmt.Sprintf("%s-x%d", name, k))
		}
		for _, id := range ids {
			h := rapid.SampledFrom([]*bool{unknown, unknown, healthy, healthy, unhealthy}).Draw(t, fmt.Sprintf("obs%d.%s.health", i, id))
			a := testAlloc(id, h)
			a.TaskGroup = name
			if rapid.IntRange(0, 9).Draw(t, fmt.Sprintf("obs%d.%s.stopped", i, id)) == 0 {
				a.DesiredStatus = structs.AllocDesiredStatusStop
			}
			switch {
			case failsDeployment(a):
				st.UnhealthyAllocs++
			case a.DeploymentStatus.IsHealthy():
				st.HealthyAllocs++
			}
			allocs = append(allocs, a)
		}
	}
	return AllocHealthChanged{Deployment: d, Allocs: allocs}
}

// TestMachine_Properties checks the machine's safety invariants on random
// event sequences:
//   - once a terminal status was emitted or seen, no UpdateStatus follows
//     (in fact no effect at all);
//   - a deployment the machine knows to be paused never fails on its
//     progress deadline, and asks for no timer.
func TestMachine_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v0 := stable(testJob(0, "nginx:1"))
		job := testJob(1, "nginx:2")
		versions := []*structs.Job{job, v0}
		d := genDeployment(t, job)
		if rapid.Bool().Draw(t, "startPaused") {
			d.Status = structs.DeploymentStatusPaused
		}
		now := t0
		m := NewMachine(d, job, now)
		paused := d.Status == structs.DeploymentStatusPaused
		terminal := false

		steps := rapid.IntRange(1, 30).Draw(t, "steps")
		for i := 0; i <= steps; i++ {
			var ev Event
			if i == 0 {
				ev = Init{Versions: versions}
			} else {
				now = now.Add(time.Duration(rapid.IntRange(0, 20).Draw(t, fmt.Sprintf("ev%d.minutes", i))) * time.Minute)
				switch rapid.IntRange(0, 9).Draw(t, fmt.Sprintf("ev%d.kind", i)) {
				case 0, 1, 2, 3:
					obs := genObservation(t, d, i)
					obs.Versions = versions
					ev = obs
				case 4, 5:
					ev = Tick{}
				case 6:
					ev = Paused{}
				case 7:
					ev = Resumed{}
				case 8:
					obs := genObservation(t, d, i)
					ev = Promoted{Deployment: obs.Deployment}
				case 9:
					if rapid.IntRange(0, 4).Draw(t, fmt.Sprintf("ev%d.jobChanged", i)) == 0 {
						ev = JobChanged{}
					} else {
						ev = Tick{}
					}
				}
			}
			switch ev := ev.(type) {
			case Paused:
				paused = true
			case Resumed:
				paused = false
			case AllocHealthChanged:
				paused = ev.Deployment.Status == structs.DeploymentStatusPaused
			case Promoted:
				paused = ev.Deployment.Status == structs.DeploymentStatusPaused
			}

			effects, wake := m.Step(ev, now)

			if terminal && len(effects) > 0 {
				t.Fatalf("step %d (%T): effects %v after a terminal status", i, ev, effects)
			}
			for _, e := range effects {
				u, ok := e.(UpdateStatus)
				if !ok {
					continue
				}
				if paused && strings.HasPrefix(u.Description, structs.DeploymentStatusDescriptionProgressDeadline) {
					t.Fatalf("step %d (%T): paused deployment failed on its deadline", i, ev)
				}
				terminal = terminal || u.Status != structs.DeploymentStatusRunning
			}
			if paused && !wake.IsZero() {
				t.Fatalf("step %d (%T): paused deployment asks for a timer at %v", i, ev, wake)
			}
			if obs, ok := ev.(AllocHealthChanged); ok && !obs.Deployment.Active() {
				terminal = true
			}
			if _, ok := ev.(JobChanged); ok {
				terminal = true
			}
			if terminal != m.Done() && terminal {
				t.Fatalf("step %d (%T): machine not done after a terminal status", i, ev)
			}
		}
	})
}
