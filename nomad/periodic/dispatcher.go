package periodic

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// retryDelay is how long a launch that failed waits before it is tried again.
const retryDelay = 5 * time.Second

// Backend is what the dispatcher needs from the server.
type Backend interface {
	State() *state.StateStore
	Now() time.Time
	// Launch records the launch of job at time at through raft and, unless
	// skip, registers its child and an evaluation in the same entry.
	Launch(job *structs.Job, at time.Time, skip bool) error
}

// Dispatcher launches the children of periodic jobs on the leader.
type Dispatcher struct {
	b      Backend
	logger hclog.Logger
}

// New returns a dispatcher.
func New(b Backend, logger hclog.Logger) *Dispatcher {
	return &Dispatcher{b: b, logger: logger.Named("periodic")}
}

// Run launches due children until ctx ends (leadership lost). It wakes at
// the earliest next launch of any job, or when jobs or launch records change.
func (d *Dispatcher) Run(ctx context.Context) {
	for ctx.Err() == nil {
		ws := memdb.NewWatchSet()
		ws.Add(d.b.State().AbandonCh())
		next := d.pass(ws)
		wctx, cancel := context.WithCancel(ctx)
		if !next.IsZero() {
			wait := next.Sub(d.b.Now())
			if wait <= 0 {
				cancel()
				continue
			}
			wctx, cancel = context.WithTimeout(ctx, wait)
		}
		_ = ws.WatchCtx(wctx)
		cancel()
	}
}

// pass decides and carries out every periodic job's due launch and returns
// the earliest time the next pass is needed (zero: only on a state change).
func (d *Dispatcher) pass(ws memdb.WatchSet) time.Time {
	snap := d.b.State().Snapshot()
	jobs, err := snap.Jobs(ws, "*")
	if err != nil {
		d.logger.Error("failed to read jobs", "error", err)
		return d.b.Now().Add(retryDelay)
	}
	if _, err := snap.PeriodicLaunches(ws); err != nil {
		d.logger.Error("failed to read periodic launches", "error", err)
		return d.b.Now().Add(retryDelay)
	}
	var earliest time.Time
	wake := func(t time.Time) {
		if !t.IsZero() && (earliest.IsZero() || t.Before(earliest)) {
			earliest = t
		}
	}
	for _, job := range jobs {
		if !job.IsPeriodicActive() {
			continue
		}
		in, err := InputFor(snap, job, d.b.Now())
		if err == nil {
			var dec Decision
			if dec, err = Decide(in); err == nil {
				wake(dec.Next)
				if !dec.Launch.IsZero() {
					err = d.b.Launch(job, dec.Launch, dec.Skip)
					if err == nil && dec.Skip {
						d.logger.Info("skipped launch: a previous child still runs (prohibit_overlap)", "job", job.ID, "namespace", job.Namespace, "launch", dec.Launch)
					}
				}
			}
		}
		if err != nil {
			d.logger.Error("periodic launch failed", "job", job.ID, "namespace", job.Namespace, "error", err)
			wake(d.b.Now().Add(retryDelay))
		}
	}
	return earliest
}

// InputFor gathers Decide's input for periodic job from snap at now.
func InputFor(snap *state.Snapshot, job *structs.Job, now time.Time) (Input, error) {
	in := Input{Config: job.Periodic, Since: time.Unix(0, job.SubmitTime), Now: now}
	l, err := snap.PeriodicLaunchByID(nil, job.Namespace, job.ID)
	if err != nil {
		return in, err
	}
	if l != nil && l.Launch.After(in.Since) {
		in.Since = l.Launch
	}
	if job.Periodic.ProhibitOverlap {
		if in.Running, err = RunningChildren(snap, job); err != nil {
			return in, err
		}
	}
	return in, nil
}

// RunningChildren reports whether a child of job is not finished.
func RunningChildren(snap *state.Snapshot, job *structs.Job) (bool, error) {
	children, err := snap.ChildJobs(nil, job.Namespace, job.ID)
	if err != nil {
		return false, err
	}
	for _, c := range children {
		if !c.Stop && c.Status != structs.JobStatusDead {
			return true, nil
		}
	}
	return false, nil
}

// NextLaunch returns job's next launch after now, or zero for a job that is
// not an active periodic job (for `job status`).
func NextLaunch(snap *state.Snapshot, job *structs.Job, now time.Time) (time.Time, error) {
	if !job.IsPeriodicActive() {
		return time.Time{}, nil
	}
	in, err := InputFor(snap, job, now)
	if err != nil {
		return time.Time{}, err
	}
	dec, err := Decide(in)
	return dec.Next, err
}
