package allocrunner

import (
	"sync"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// shutdownDelayHook waits the group's shutdown_delay before the tasks are
// killed, when any task has started.
type shutdownDelayHook struct {
	shutdownCh <-chan struct{}

	mu    sync.Mutex
	delay time.Duration // guarded by mu; updated in place
}

var (
	_ PreKiller = (*shutdownDelayHook)(nil)
	_ Updater   = (*shutdownDelayHook)(nil)
)

func newShutdownDelayHook(ar *AllocRunner) *shutdownDelayHook {
	h := &shutdownDelayHook{shutdownCh: ar.shutdownCh}
	h.delay = groupShutdownDelay(ar.alloc)
	return h
}

func groupShutdownDelay(a *structs.Allocation) time.Duration {
	if a == nil || a.Job == nil {
		return 0
	}
	if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil && tg.ShutdownDelay != nil {
		return *tg.ShutdownDelay
	}
	return 0
}

func (*shutdownDelayHook) Name() string { return "group_shutdown_delay" }

// PreKill waits out the delay, or until the runner shuts down.
func (h *shutdownDelayHook) PreKill(req *PreKillRequest) {
	h.mu.Lock()
	d := h.delay
	h.mu.Unlock()
	if d <= 0 || !req.TasksStarted || req.NoShutdownDelay {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-h.shutdownCh:
	}
}

// Update adopts the new version's delay.
func (h *shutdownDelayHook) Update(req *UpdateRequest) error {
	h.mu.Lock()
	h.delay = groupShutdownDelay(req.Alloc)
	h.mu.Unlock()
	return nil
}

// stateHook deletes the alloc's persisted state when the runner is
// destroyed.
type stateHook struct {
	db      StateDB
	allocID string
}

var _ Destroyer = (*stateHook)(nil)

func (*stateHook) Name() string { return "state" }

func (h *stateHook) Destroy() error { return h.db.DeleteAlloc(h.allocID) }
