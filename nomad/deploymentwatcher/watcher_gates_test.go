package deploymentwatcher

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// scriptedGates answers webhook calls with the results in script, then
// with the last one, and records the calls.
type scriptedGates struct {
	mu     sync.Mutex
	script []string
	calls  []CallWebhook
}

func (g *scriptedGates) QueryMetric(_ context.Context, q QueryMetric) GateAnswered {
	return GateAnswered{Group: q.Group, Gate: structs.GateMetric, Result: structs.GateResultPass, Reason: "ok"}
}

func (g *scriptedGates) CallWebhook(_ context.Context, c CallWebhook) GateAnswered {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls = append(g.calls, c)
	r := g.script[min(len(g.calls), len(g.script))-1]
	return GateAnswered{Group: c.Group, Gate: structs.GateWebhook, Result: r, Reason: "answered " + r}
}

func (g *scriptedGates) called() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.calls)
}

// TestWatcher_WebhookGatePausesRetriesAndPasses drives the whole driver: a
// gated group's first wave turns healthy; the webhook refuses, the
// deployment is paused with the record written; the retry on the clock
// passes, the deployment resumes with PassedAt = 1 and an evaluation for
// the next wave. A new leader (disable, enable) of a deployment a gate
// holds paused asks the webhook again.
func TestWatcher_WebhookGatePausesRetriesAndPasses(t *testing.T) {
	for _, failover := range []bool{false, true} {
		t.Run(map[bool]string{false: "one leader", true: "failover"}[failover], func(t *testing.T) {
			e := &env{clock: newFakeClock(t0)}
			e.backend = newFakeBackend(e.clock)
			e.job = e.backend.register(t, gateJob(0, hookMeta))
			d := testDeployment(e.job)
			e.backend.plan(t, e.job, d, "a1")
			gates := &scriptedGates{script: []string{structs.GateResultFail, structs.GateResultFail, structs.GateResultPass}}
			e.watcher = New(e.backend, nil, e.clock)
			e.watcher.SetGateRunner(gates)
			t.Cleanup(func() { e.watcher.SetEnabled(false) })
			e.watcher.SetEnabled(true)
			e.clock.waitTimerAt(t, at(pd))

			e.backend.health(t, "a1", true)
			e.waitStatus(t, structs.DeploymentStatusPaused, `Deployment paused: webhook gate of group "web" before wave 2: answered fail`)
			rec := mustDeployment(t, e.store()).TaskGroups["web"].Gate
			require.Equal(t, structs.GateWebhook, rec.PausedBy)
			require.Equal(t, "wave 2", rec.Checkpoint)
			require.Equal(t, 1, gates.called())

			if failover {
				e.watcher.SetEnabled(false)
				e.watcher = New(e.backend, nil, e.clock)
				e.watcher.SetGateRunner(gates)
				e.watcher.SetEnabled(true)
				// The new leader asks at once (its second call fails too).
				e.clock.waitTimers(t, "webhook retry", func(ats []time.Time) bool { return gates.called() == 2 && len(ats) > 0 })
			} else {
				e.clock.waitTimerAt(t, at(time.Second))
				e.clock.Advance(time.Second)
				e.clock.waitTimerAt(t, at(3*time.Second)) // the second retry after 2s
			}
			e.clock.Advance(2 * time.Second)
			e.waitDeployment(t, "gates passed", func(d *structs.Deployment) bool {
				g := d.TaskGroups["web"].Gate
				return d.Status == structs.DeploymentStatusRunning && g != nil && g.PassedAt == 1 && g.Passed == 1 && g.PausedBy == ""
			})
			require.Equal(t, structs.DeploymentStatusDescriptionRunning, mustDeployment(t, e.store()).StatusDescription)
			require.Equal(t, 3, gates.called())
			require.NotEmpty(t, e.waitWatcherEvals(t, 1))
		})
	}
}
