package deploymentwatcher

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/nomad/structs"
)

// genSignalCase draws conditions for groups "web" and "api", their
// allocations (restarts, OOM kills, health, node), a status and counts at
// resume.
func genSignalCase(t *rapid.T) (*structs.Deployment, *structs.Job, []*structs.Allocation) {
	job := testJob(1, "nginx:2")
	api := *job.TaskGroups[0]
	api.Name = "api"
	job.TaskGroups = append(job.TaskGroups, &api)
	d := testDeployment(job)
	d.TaskGroups["api"] = &structs.DeploymentState{DesiredTotal: 3}
	d.Status = rapid.SampledFrom([]string{structs.DeploymentStatusRunning, structs.DeploymentStatusPaused}).Draw(t, "status")
	conds := func(label string) string {
		var out []string
		for _, sig := range structs.RolloutSignalNames {
			if rapid.Bool().Draw(t, label+"."+sig) {
				op := rapid.SampledFrom([]string{">", ">="}).Draw(t, label+"."+sig+".op")
				n := rapid.IntRange(0, 5).Draw(t, label+"."+sig+".n")
				if op == ">=" && n == 0 {
					n = 1
				}
				out = append(out, fmt.Sprintf("%s%s%d", sig, op, n))
			}
		}
		return strings.Join(out, ",")
	}
	var allocs []*structs.Allocation
	for i, tg := range job.TaskGroups {
		tg.Meta = map[string]string{}
		if c := conds(tg.Name + ".pause"); c != "" {
			tg.Meta[structs.DroverMetaAutoPauseOn] = c
		}
		if c := conds(tg.Name + ".fail"); c != "" {
			tg.Meta[structs.DroverMetaAutoFailOn] = c
		}
		if rapid.Bool().Draw(t, tg.Name+".resumed") {
			at := map[string]int{}
			for _, sig := range structs.RolloutSignalNames {
				at[sig] = rapid.IntRange(0, 6).Draw(t, tg.Name+".at."+sig)
			}
			d.TaskGroups[tg.Name].SignalsAtResume = at
		}
		for k := range rapid.IntRange(0, 4).Draw(t, tg.Name+".allocs") {
			id := fmt.Sprintf("%d-%d", i, k)
			h := rapid.SampledFrom([]*bool{unknown, healthy, unhealthy}).Draw(t, id+".health")
			node := rapid.SampledFrom([]string{nodeA, nodeB, nodeC}).Draw(t, id+".node")
			a := oomKilled(crashing(id, node, uint64(rapid.IntRange(0, 3).Draw(t, id+".restarts")), h), rapid.IntRange(0, 2).Draw(t, id+".oom"))
			a.TaskGroup = tg.Name
			allocs = append(allocs, a)
		}
	}
	return d, job, allocs
}

// oracle decides from first principles: raw sums over the allocations, the
// condition text re-read with Sscanf.
func oracle(d *structs.Deployment, job *structs.Job, allocs []*structs.Allocation) (fail, pause bool) {
	sum := func(group, sig string) int {
		n := 0
		for _, a := range allocs {
			if a.TaskGroup != group {
				continue
			}
			ts := a.TaskStates["server"]
			switch sig {
			case structs.SignalRestarts:
				n += int(ts.Restarts)
			case structs.SignalOOM:
				n += len(ts.Events)
			case structs.SignalUnhealthy:
				if a.DeploymentStatus.IsUnhealthy() {
					n++
				}
			}
		}
		return n
	}
	holds := func(group, list string, atResume map[string]int) bool {
		if list == "" {
			return false
		}
		for _, c := range strings.Split(list, ",") {
			i := strings.IndexAny(c, "><")
			sig, rest := c[:i], c[i:]
			var n int
			orEqual := strings.HasPrefix(rest, ">=")
			fmt.Sscanf(strings.TrimLeft(rest, ">="), "%d", &n)
			got := sum(group, sig)
			if (got > n || (orEqual && got == n)) && got > atResume[sig] {
				return true
			}
		}
		return false
	}
	for _, tg := range job.TaskGroups {
		fail = fail || holds(tg.Name, tg.Meta[structs.DroverMetaAutoFailOn], nil)
		if d.Status == structs.DeploymentStatusRunning {
			pause = pause || holds(tg.Name, tg.Meta[structs.DroverMetaAutoPauseOn], d.TaskGroups[tg.Name].SignalsAtResume)
		}
	}
	return fail, pause
}

// TestDecideSignalsProperties: the verdict agrees with the oracle (fail
// wins over pause; pause only while running and above the counts at
// resume); its reason names a signal and the group; one more restart never
// undoes a failure.
func TestDecideSignalsProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d, job, allocs := genSignalCase(t)
		v := DecideSignals(d, rulesOf(job), allocs)
		fail, pause := oracle(d, job, allocs)
		want := ""
		switch {
		case fail:
			want = structs.DeploymentStatusFailed
		case pause:
			want = structs.DeploymentStatusPaused
		}
		if v.Status != want {
			t.Fatalf("verdict %q (%s), oracle %q", v.Status, v.Reason, want)
		}
		if v.Status != "" {
			sig := strings.Fields(v.Reason)[0]
			if !strings.Contains(strings.Join(structs.RolloutSignalNames, " "), sig) ||
				!(strings.Contains(v.Reason, `in group "web"`) || strings.Contains(v.Reason, `in group "api"`)) {
				t.Fatalf("reason %q names no signal or group", v.Reason)
			}
		}
		if v.Status == structs.DeploymentStatusFailed && len(allocs) > 0 {
			k := rapid.IntRange(0, len(allocs)-1).Draw(t, "more")
			allocs[k].TaskStates["server"].Restarts++
			if again := DecideSignals(d, rulesOf(job), allocs); again.Status != structs.DeploymentStatusFailed {
				t.Fatalf("one more restart undid the failure: %+v", again)
			}
		}
	})
}

// TestMachineSignalsSequenceProperties drives a machine through a crash
// loop whose restarts only grow, with the user resuming at random (the
// state store recording the counts then): the machine pauses only a
// running deployment, never twice without a resume in between, never on
// counts no higher than at the last resume, and fails at most once, after
// which it is done.
func TestMachineSignalsSequenceProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pauseAt := rapid.IntRange(0, 4).Draw(t, "pauseAt")
		failAt := rapid.IntRange(pauseAt, 12).Draw(t, "failAt")
		job := signalJob(1, fmt.Sprintf("restarts>%d", pauseAt), fmt.Sprintf("restarts>%d", failAt))
		d := testDeployment(job)
		m := NewMachine(d, job, t0)
		m.Step(Init{}, t0)
		restarts, atResume := uint64(0), -1
		for i := range 30 {
			now := at(time.Duration(i) * time.Second)
			if d.Status == structs.DeploymentStatusPaused && rapid.Bool().Draw(t, fmt.Sprintf("resume%d", i)) {
				d = d.Copy()
				d.Status = structs.DeploymentStatusRunning
				d.TaskGroups["web"].SignalsAtResume = map[string]int{structs.SignalRestarts: int(restarts)}
				atResume = int(restarts)
				m.Step(Resumed{}, now)
			}
			restarts += uint64(rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("more%d", i)))
			effects, _ := m.Step(AllocHealthChanged{Deployment: d, Allocs: []*structs.Allocation{crashing("a1", nodeA, restarts, unknown)}}, now)
			for _, e := range effects {
				upd, ok := e.(UpdateStatus)
				if !ok {
					continue
				}
				switch upd.Status {
				case structs.DeploymentStatusPaused:
					if d.Status != structs.DeploymentStatusRunning || int(restarts) <= pauseAt || int(restarts) <= atResume {
						t.Fatalf("paused at %d restarts (threshold %d, %d at resume) while %s", restarts, pauseAt, atResume, d.Status)
					}
					d = d.Copy()
					d.Status, d.StatusDescription = upd.Status, upd.Description
				case structs.DeploymentStatusFailed:
					if int(restarts) <= failAt || !m.Done() {
						t.Fatalf("failed at %d restarts (threshold %d), done %v", restarts, failAt, m.Done())
					}
				default:
					t.Fatalf("unexpected status %q", upd.Status)
				}
			}
			if int(restarts) > failAt && !m.Done() {
				t.Fatalf("%d restarts past auto_fail_on %d and not failed", restarts, failAt)
			}
			if m.Done() {
				return
			}
		}
	})
}
