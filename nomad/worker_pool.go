package nomad

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/broker"
)

// coreScheduler is Nomad's name for the internal (garbage collection)
// scheduler; an enabled_schedulers list must name it.
const coreScheduler = "_core"

// knownSchedulers are the scheduler names an enabled_schedulers list may
// use (Nomad's). Workers dequeue the queues among them Drover runs.
var knownSchedulers = []string{"service", "batch", "system", "sysbatch", coreScheduler}

// WorkerPoolConfig is the scheduler worker pool's configuration
// (/v1/agent/schedulers/config).
type WorkerPoolConfig struct {
	NumSchedulers     int
	EnabledSchedulers []string
}

// WorkerInfo describes one scheduler worker.
type WorkerInfo struct {
	ID                string
	EnabledSchedulers []string
	Started           string // RFC 3339, "" when not started
	Status            string // "Started" or "Stopped" (workers run on the leader)
	WorkloadStatus    string // "WaitingToDequeue", "Scheduling" or "Stopped"
}

// ErrInvalidWorkerConfig is returned for a worker pool configuration that
// is out of range.
var ErrInvalidWorkerConfig = fmt.Errorf("Invalid request")

// ValidateWorkerPoolConfig checks cfg as Nomad does: NumSchedulers between
// 0 and the number of CPUs, every enabled scheduler known, "_core" among
// them.
func ValidateWorkerPoolConfig(cfg WorkerPoolConfig) error {
	if cfg.NumSchedulers < 0 || cfg.NumSchedulers > runtime.NumCPU() {
		return fmt.Errorf("%w: num_schedulers must be between 0 and %d, got %d", ErrInvalidWorkerConfig, runtime.NumCPU(), cfg.NumSchedulers)
	}
	if !slices.Contains(cfg.EnabledSchedulers, coreScheduler) {
		return fmt.Errorf("%w: enabled_schedulers must include %q", ErrInvalidWorkerConfig, coreScheduler)
	}
	for _, s := range cfg.EnabledSchedulers {
		if !slices.Contains(knownSchedulers, s) {
			return fmt.Errorf("%w: unknown scheduler %q in enabled_schedulers", ErrInvalidWorkerConfig, s)
		}
	}
	return nil
}

// workerPool runs the scheduler workers while the server leads and lets
// the operator resize them at run time.
type workerPool struct {
	srv *Server

	mu      sync.Mutex
	cfg     WorkerPoolConfig
	ctx     context.Context // the leadership's context; nil when not leading
	stop    context.CancelFunc
	wg      sync.WaitGroup
	workers []*worker
	started string
}

// defaultEnabledSchedulers is every scheduler, as in Nomad. Workers serve
// the queues among them that Drover has (see queues).
func defaultEnabledSchedulers() []string { return slices.Clone(knownSchedulers) }

// queues returns the broker queues of enabled: the known job types among
// them Drover schedules, and the failed queue.
func queues(enabled []string) []string {
	var out []string
	for _, t := range schedulerTypes {
		if t == broker.FailedQueue || slices.Contains(enabled, t) {
			out = append(out, t)
		}
	}
	return out
}

// start runs the configured workers until ctx ends (the leadership's).
func (p *workerPool) start(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ctx = ctx
	p.launch()
}

// launch starts cfg's workers under a child of p.ctx. The caller holds mu.
func (p *workerPool) launch() {
	ctx, cancel := context.WithCancel(p.ctx)
	p.stop = cancel
	p.workers = nil
	p.started = p.srv.now().UTC().Format("2006-01-02T15:04:05Z07:00")
	q := queues(p.cfg.EnabledSchedulers)
	for i := range p.cfg.NumSchedulers {
		w := &worker{srv: p.srv, id: i, queues: q}
		p.workers = append(p.workers, w)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			w.run(ctx)
		}()
	}
}

// wait returns when every worker stopped (after the leadership ended).
func (p *workerPool) wait() { p.wg.Wait() }

// config returns the pool's configuration.
func (p *workerPool) config() WorkerPoolConfig {
	p.mu.Lock()
	defer p.mu.Unlock()
	return WorkerPoolConfig{NumSchedulers: p.cfg.NumSchedulers, EnabledSchedulers: slices.Clone(p.cfg.EnabledSchedulers)}
}

// setConfig validates and applies cfg: when leading, the workers are
// replaced (each finishes the evaluation it is running).
func (p *workerPool) setConfig(cfg WorkerPoolConfig) error {
	if err := ValidateWorkerPoolConfig(cfg); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cfg = WorkerPoolConfig{NumSchedulers: cfg.NumSchedulers, EnabledSchedulers: slices.Clone(cfg.EnabledSchedulers)}
	if p.ctx != nil && p.ctx.Err() == nil {
		p.stop()
		p.launch()
	}
	return nil
}

// info describes the configured workers.
func (p *workerPool) info() []WorkerInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	leading := p.ctx != nil && p.ctx.Err() == nil
	out := make([]WorkerInfo, 0, p.cfg.NumSchedulers)
	for i := range p.cfg.NumSchedulers {
		wi := WorkerInfo{ID: fmt.Sprintf("%s-worker-%d", p.srv.config.NodeName, i),
			EnabledSchedulers: slices.Clone(p.cfg.EnabledSchedulers), Status: "Stopped", WorkloadStatus: "Stopped"}
		if leading && i < len(p.workers) {
			wi.Status, wi.Started = "Started", p.started
			wi.WorkloadStatus = "WaitingToDequeue"
			if p.workers[i].busy.Load() {
				wi.WorkloadStatus = "Scheduling"
			}
		}
		out = append(out, wi)
	}
	return out
}

// WorkerPoolConfig returns the scheduler worker configuration.
func (s *Server) WorkerPoolConfig() WorkerPoolConfig { return s.workers.config() }

// SetWorkerPoolConfig changes the number of scheduler workers and the
// schedulers they run; a bad configuration is ErrInvalidWorkerConfig.
// caller needs agent:write (nil: ACLs disabled, or an internal caller).
func (s *Server) SetWorkerPoolConfig(caller *acl.ACL, cfg WorkerPoolConfig) error {
	if err := permit(caller.AllowAgentWrite()); err != nil {
		return err
	}
	return s.workers.setConfig(cfg)
}

// WorkersInfo describes the scheduler workers.
func (s *Server) WorkersInfo() []WorkerInfo { return s.workers.info() }
