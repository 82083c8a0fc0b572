package health

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Check types the client runs.
const (
	CheckHTTP   = "http"
	CheckTCP    = "tcp"
	CheckScript = "script" // a command run inside the check's task
)

// Check statuses, as /v1/client/allocation/:id/checks reports them.
const (
	StatusPending = "pending"
	StatusSuccess = "success"
	StatusWarning = "warning" // a script check that exited 1
	StatusFailure = "failure"
)

// Check modes: a readiness check (on_update = "ignore") is run and
// reported but does not count toward deployment health.
const (
	ModeHealthiness = "healthiness"
	ModeReadiness   = "readiness"
)

// Defaults for checks that leave them unset.
const (
	DefaultCheckInterval = 10 * time.Second
	DefaultCheckTimeout  = 5 * time.Second
)

// maxOutput bounds the output kept of a probe.
const maxOutput = 1024

// CheckDef is a resolved check: what to probe and how often.
type CheckDef struct {
	ID      string // stable for a given allocation and definition
	Name    string
	Group   string
	Task    string // "" for a group service
	Service string
	Mode    string // ModeHealthiness or ModeReadiness

	Type     string // CheckHTTP, CheckTCP or CheckScript
	Address  string // host:port (http and tcp)
	Protocol string // http or https (http checks)
	Method   string // default GET
	Path     string
	Header   map[string][]string
	Body     string
	Command  []string // script: the program and its arguments, run in Task

	Interval      time.Duration
	Timeout       time.Duration
	InitialPassed bool // initial_status = "passing"
	// IgnoreWarnings (on_update = "ignore_warnings"): a warning counts as
	// passing for deployment health.
	IgnoreWarnings bool
	// Restart is the check's check_restart (merged with its service's);
	// Limit 0 never restarts.
	Restart CheckRestart
	// Err, when set, is why the check cannot be probed (an unknown port
	// label): it fails every time with Err as its output.
	Err string
}

// Outcome is the result of one probe: passing, warning (script checks),
// or else failing.
type Outcome struct {
	Passing    bool
	Warning    bool
	StatusCode int // HTTP status; 0 otherwise
	Output     string
	// NotRun: the check could not run because its task is not running.
	// Nothing is recorded; the check runs again when its task starts
	// (Checker.Wake) or at the next interval.
	NotRun bool
}

// status is the check status an outcome records.
func (o Outcome) status() string {
	switch {
	case o.Passing:
		return StatusSuccess
	case o.Warning:
		return StatusWarning
	}
	return StatusFailure
}

// Prober runs a check once; ctx carries the check's timeout.
type Prober func(ctx context.Context, c CheckDef) Outcome

// CheckResult is a check's latest status.
type CheckResult struct {
	Def        CheckDef
	Status     string // StatusPending, StatusSuccess or StatusFailure
	Since      time.Time
	Timestamp  time.Time // of the latest probe; zero while pending
	StatusCode int
	Output     string
	// Healthy is whether the check counts as passing for deployment
	// health: success, or warning with Def.IgnoreWarnings. HealthySince is
	// when Healthy took its current value.
	Healthy      bool
	HealthySince time.Time
}

// Passing reports whether the check passes.
func (r CheckResult) Passing() bool { return r.Status == StatusSuccess }

// healthyStatus reports whether status counts as passing for deployment
// health (on_update "ignore_warnings" lets a warning pass).
func healthyStatus(status string, ignoreWarnings bool) bool {
	return status == StatusSuccess || (status == StatusWarning && ignoreWarnings)
}

// CheckerConfig configures a Checker.
type CheckerConfig struct {
	Checks   []CheckDef
	Probe    Prober           // default Probe
	Now      func() time.Time // timestamps; default time.Now
	OnChange func()           // after a check's status changed; must not block
	// TaskStarted returns when the named task last started, or the zero
	// time while it is not running (check_restart's grace counts from
	// it). Nil: no check restarts a task.
	TaskStarted func(task string) time.Time
	// Restart restarts the check's task: check_restart decided so. It is
	// called from the check's goroutine and must not block for long.
	Restart func(def CheckDef, reason string)
}

// Checker runs checks, each in its own goroutine at its interval, and keeps
// their latest results. Goroutines only wait, probe and record; decisions
// are Evaluate's.
type Checker struct {
	cfg CheckerConfig
	wg  sync.WaitGroup

	wake map[string]chan struct{} // by check ID; room for one token (Wake)

	mu       sync.Mutex
	cancel   context.CancelFunc     // set by Start; guarded by mu
	results  map[string]CheckResult // by check ID; guarded by mu
	failures map[string]int         // check_restart's count by check ID; guarded by mu
}

// NewChecker returns a checker whose results are pending (or passing, per
// initial_status) from start; nothing runs until Start.
func NewChecker(cfg CheckerConfig, start time.Time) *Checker {
	if cfg.Probe == nil {
		cfg.Probe = Probe
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.OnChange == nil {
		cfg.OnChange = func() {}
	}
	c := &Checker{
		cfg:      cfg,
		wake:     make(map[string]chan struct{}, len(cfg.Checks)),
		results:  make(map[string]CheckResult, len(cfg.Checks)),
		failures: map[string]int{},
	}
	for _, def := range cfg.Checks {
		r := CheckResult{Def: def, Status: StatusPending, Since: start, HealthySince: start}
		if def.InitialPassed {
			r.Status, r.Healthy = StatusSuccess, true
		}
		c.results[def.ID] = r
		c.wake[def.ID] = make(chan struct{}, 1)
	}
	return c
}

// Wake runs at once the checks that could not run because their task was
// not running (a task state changed). It does not block.
func (c *Checker) Wake() {
	for _, ch := range c.wake {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Start runs every check until ctx ends or Stop. Call it once.
func (c *Checker) Start(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	c.cancel = cancel
	c.mu.Unlock()
	for _, def := range c.cfg.Checks {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.run(ctx, def)
		}()
	}
}

// Stop stops the checks and waits for their goroutines. Safe without Start.
func (c *Checker) Stop() {
	c.mu.Lock()
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	c.wg.Wait()
}

// Results returns the latest result of every check, sorted by ID.
func (c *Checker) Results() []CheckResult {
	c.mu.Lock()
	out := make([]CheckResult, 0, len(c.results))
	for _, r := range c.results {
		out = append(out, r)
	}
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Def.ID < out[j].Def.ID })
	return out
}

// run probes def at once, then every interval, until ctx ends. A check
// that could not run (its task is not running) also runs on Wake.
func (c *Checker) run(ctx context.Context, def CheckDef) {
	interval := orDefault(def.Interval, DefaultCheckInterval)
	timeout := orDefault(def.Timeout, DefaultCheckTimeout)
	wake := c.wake[def.ID]
	for {
		select { // a Wake before this probe is served by it
		case <-wake:
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, timeout)
		out := c.cfg.Probe(pctx, def)
		cancel()
		if ctx.Err() != nil {
			return
		}
		var wakeCh <-chan struct{}
		if out.NotRun {
			wakeCh = wake
		} else {
			changed, restart, reason := c.record(def, out)
			if changed {
				c.cfg.OnChange()
			}
			if restart {
				c.cfg.Restart(def, reason)
			}
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-wakeCh:
			t.Stop()
		}
	}
}

// record stores an outcome and applies check_restart to it. changed
// reports that the status changed; restart that the check's task must
// restart now, for reason.
func (c *Checker) record(def CheckDef, out Outcome) (changed, restart bool, reason string) {
	now := c.cfg.Now()
	status := out.status()
	var started time.Time
	if c.cfg.TaskStarted != nil && c.cfg.Restart != nil && def.Restart.Limit > 0 {
		started = c.cfg.TaskStarted(def.Task)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.results[def.ID]
	changed = r.Status != status
	if changed {
		r.Status, r.Since = status, now
	}
	if healthy := healthyStatus(status, def.IgnoreWarnings); healthy != r.Healthy {
		r.Healthy, r.HealthySince = healthy, now
	}
	r.Timestamp, r.StatusCode, r.Output = now, out.StatusCode, out.Output
	c.results[def.ID] = r
	c.failures[def.ID], restart = ObserveRestart(def.Restart, c.failures[def.ID], status, started, now)
	if restart {
		reason = RestartReason(def.Name)
	}
	return changed, restart, reason
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// probeTransport is shared by HTTP probes; connections are not reused, so
// each probe sees the service as a new client would.
var probeTransport = &http.Transport{DisableKeepAlives: true, Proxy: nil}

// Probe runs one HTTP or TCP check against the network (script checks
// need a TaskExec: see ProbeWith). An HTTP check
// passes on a 2xx or 3xx answer (redirects are not followed); a TCP check
// passes when a connection opens. ctx bounds the probe.
func Probe(ctx context.Context, c CheckDef) Outcome {
	if c.Err != "" {
		return Outcome{Output: c.Err}
	}
	switch c.Type {
	case CheckHTTP:
		return probeHTTP(ctx, c)
	case CheckTCP:
		return probeTCP(ctx, c)
	}
	return Outcome{Output: fmt.Sprintf("unsupported check type %q", c.Type)}
}

func probeTCP(ctx context.Context, c CheckDef) Outcome {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.Address)
	if err != nil {
		return Outcome{Output: fmt.Sprintf("TCP connect %s: %v", c.Address, err)}
	}
	_ = conn.Close()
	return Outcome{Passing: true, Output: fmt.Sprintf("TCP connect %s: Success", c.Address)}
}

func probeHTTP(ctx context.Context, c CheckDef) Outcome {
	url := checkURL(c)
	method := c.Method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if c.Body != "" {
		body = strings.NewReader(c.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return Outcome{Output: fmt.Sprintf("HTTP %s %s: %v", method, url, err)}
	}
	for k, vs := range c.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if host := req.Header.Get("Host"); host != "" {
		req.Host = host
	}
	client := &http.Client{
		Transport:     probeTransport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		return Outcome{Output: fmt.Sprintf("HTTP %s %s: %v", method, url, err)}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxOutput))
	out := Outcome{
		Passing:    resp.StatusCode >= 200 && resp.StatusCode < 400,
		StatusCode: resp.StatusCode,
		Output:     fmt.Sprintf("HTTP %s %s: %s", method, url, resp.Status),
	}
	if len(raw) > 0 {
		out.Output += " Output: " + string(raw)
	}
	return out
}

// checkURL is the URL an HTTP check requests: protocol://address/path.
func checkURL(c CheckDef) string {
	proto := c.Protocol
	if proto == "" {
		proto = "http"
	}
	path := c.Path
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return proto + "://" + c.Address + path
}
