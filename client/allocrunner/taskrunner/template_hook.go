package taskrunner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	ctconf "github.com/hashicorp/consul-template/config"
	"github.com/hashicorp/consul-template/manager"

	"github.com/drover-project/drover/client/allocrunner/taskenv"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

// Events of the template hook (Nomad's types and wording).
const (
	EventTemplate       = "Template"
	EventTaskHookFailed = "Task hook failed"
)

// The template hook renders the task's template blocks with
// consul-template's manager. It is a prestart hook: it runs before every
// start, after Prepare (and after the hooks ordered before it); the first
// time it starts the template runners and holds the start until every
// template has rendered once. Then it watches: a re-render applies the
// template's change_mode (after a random part of its splay): restart the
// task, send change_signal through the driver, run change_script inside
// the task through the driver's exec, or nothing. Templates with
// once = true render in their own runner, which stops after one render.
// env = true templates are read into the task's environment at every
// start. The runners stop when Run returns (the task is dead, or the
// client shuts down); a reattached task gets them again.
type templateHook struct {
	tr  *TaskRunner
	cfg *TemplateConfig // nil: templates cannot be rendered on this client

	mu      sync.Mutex
	started bool
	stopped bool
	ranPost bool // poststart ran once
	runners []*manager.Runner
	// byConfig maps each consul-template config to its template.
	byConfig map[*ctconf.TemplateConfig]*structs.Template
	paths    map[*structs.Template]templatePaths
	order    []*structs.Template             // the templates the runners render, in task order
	lastDid  map[*structs.Template]time.Time // last render seen, per template
	stopCh   chan struct{}                   // closed by stop
	wg       sync.WaitGroup                  // the watch and script goroutines
	runDone  []chan struct{}                 // closed when each runner's Start returns
	dialer   *ctDialer                       // the runners' connections to the servers
}

func newTemplateHook(tr *TaskRunner, cfg *TemplateConfig) *templateHook {
	return &templateHook{tr: tr, cfg: cfg, stopCh: make(chan struct{})}
}

// prestart renders the templates before a start. It reports false when
// the task must not start: it was killed or the client shuts down while
// waiting, or the templates failed (the task is then dead and failed).
func (h *templateHook) prestart() bool {
	task := h.tr.Task()
	if len(task.Templates) == 0 {
		return true
	}
	h.mu.Lock()
	started := h.started
	h.mu.Unlock()
	if !started {
		if err := h.start(task); err != nil {
			if !errors.Is(err, ErrAborted) {
				h.fail(err)
			}
			return false
		}
		if !h.waitFirstRender() {
			return false
		}
		h.watch()
	}
	if err := h.loadEnv(); err != nil {
		h.fail(err)
		return false
	}
	return true
}

// restored starts the runners again for a task Restore reattached to,
// without holding anything: the files are in place, and a render that
// writes one (its data changed meanwhile, or from now on) applies its
// change_mode; one that finds the file as it would write it does nothing.
func (h *templateHook) restored() {
	task := h.tr.Task()
	h.mu.Lock()
	started := h.started
	h.mu.Unlock()
	if len(task.Templates) == 0 || started {
		return
	}
	if err := h.start(task); err != nil {
		if !errors.Is(err, ErrAborted) {
			h.tr.Kill(templateFailed(h.tr.now(), err))
		}
		return
	}
	h.mu.Lock()
	h.ranPost = true // the first render's scripts ran before the client restart
	h.mu.Unlock()
	h.watch() // lastDid is empty: every write counts as a change
}

// poststart runs, after the first start, the change scripts that ask to
// run on the first render too.
func (h *templateHook) poststart() {
	h.mu.Lock()
	first := h.started && !h.ranPost && !h.stopped
	h.ranPost = h.ranPost || h.started
	var scripts []*structs.Template
	if first {
		for _, t := range h.order {
			if t.ChangeMode == structs.TemplateChangeModeScript && t.ChangeScript != nil && t.ChangeScript.RunOnFirstRender {
				scripts = append(scripts, t)
			}
		}
		for _, t := range scripts {
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				h.runScript(t)
			}()
		}
	}
	h.mu.Unlock()
}

// start builds the runners of the task's templates and starts them.
func (h *templateHook) start(task *structs.Task) error {
	if h.cfg == nil || h.cfg.Dial == nil {
		return fmt.Errorf("this client cannot render templates")
	}
	tr := h.tr
	env := tr.baseEnv()
	td := tr.allocDir.TaskDir(tr.name)
	allocDir := tr.allocDir.Dir()
	sandbox := !h.cfg.DisableFileSandbox
	deny := h.cfg.FunctionDenylist
	if deny == nil {
		deny = DefaultTemplateFunctionDenylist
	}
	sandboxDir := ""
	if sandbox {
		sandboxDir = allocDir
	}
	funcs := templateFuncs(env.Map())
	pathEnv := relativeDirs(env)

	byConfig := map[*ctconf.TemplateConfig]*structs.Template{}
	paths := map[*structs.Template]templatePaths{}
	var watched, once ctconf.TemplateConfigs
	for _, t := range task.Templates {
		p, err := resolveTemplatePaths(t, pathEnv, allocDir, td.Dir, sandbox)
		if err != nil {
			return err
		}
		tc, err := ctTemplate(t, p, deny, sandboxDir, funcs)
		if err != nil {
			return err
		}
		byConfig[tc], paths[t] = t, p
		if t.Once {
			once = append(once, tc)
		} else {
			watched = append(watched, tc)
		}
	}
	token := tr.nomadToken()
	dialer := newCTDialer(h.cfg.Dial)
	var runners []*manager.Runner
	for _, set := range []struct {
		tcs  ctconf.TemplateConfigs
		once bool
	}{{watched, false}, {once, true}} {
		if len(set.tcs) == 0 {
			continue
		}
		r, err := manager.NewRunner(h.runnerConfig(set.tcs, set.once, token, allocDir, sandbox, dialer), false)
		if err != nil {
			for _, r := range runners {
				r.Stop()
			}
			dialer.closeAll()
			return fmt.Errorf("building the template runner: %w", err)
		}
		r.Env = env.Map()
		runners = append(runners, r)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		for _, r := range runners {
			r.Stop()
		}
		dialer.closeAll()
		return fmt.Errorf("%w: the task is stopping", ErrAborted)
	}
	h.started, h.runners, h.byConfig, h.paths, h.dialer = true, runners, byConfig, paths, dialer
	h.order = task.Templates
	h.lastDid = map[*structs.Template]time.Time{}
	for _, r := range runners {
		done := make(chan struct{})
		h.runDone = append(h.runDone, done)
		go func() {
			defer close(done)
			r.Start()
		}()
	}
	return nil
}

// runnerConfig is the consul-template config of one runner: Nomad at a
// server through Dial, with the allocation's namespace and the task's
// workload identity; no Consul, no Vault.
func (h *templateHook) runnerConfig(tcs ctconf.TemplateConfigs, once bool, token, allocDir string, sandbox bool, dialer *ctDialer) *ctconf.Config {
	c := ctconf.DefaultConfig()
	c.Templates = &tcs
	c.Once = once
	c.Nomad = ctconf.DefaultNomadConfig()
	c.Nomad.Enabled = ctconf.Bool(true)
	c.Nomad.Address = ctconf.String("http://drover-server") // Dial picks the server
	h.tr.mu.Lock()
	c.Nomad.Namespace = ctconf.String(h.tr.alloc.Namespace)
	h.tr.mu.Unlock()
	c.Nomad.Token = ctconf.String(token)
	c.Nomad.Transport.CustomDialer = dialer
	c.Consul.Address = ctconf.String("")
	c.Vault.Address = ctconf.String("")
	c.Vault.RenewToken = ctconf.Bool(false)
	c.Vault.Token = ctconf.String("")
	c.Vault.VaultAgentTokenFile = ctconf.String("")
	c.Vault.DefaultLeaseDuration = ctconf.TimeDuration(5 * time.Minute)
	c.ReaderFunc = sandboxedReader(allocDir, sandbox)
	c.RendererFunc = sandboxedRenderer(allocDir, sandbox)
	c.Finalize()
	c.Vault.Enabled = ctconf.Bool(false)
	c.Consul.Address = ctconf.String("")
	return c
}

// waitFirstRender holds until every template rendered once. It reports
// false when the task was killed, the client shuts down, or a runner
// failed (the task is then dead and failed).
func (h *templateHook) waitFirstRender() bool {
	h.mu.Lock()
	runners := h.runners
	h.mu.Unlock()
	// A template still waiting after templateMissingAfter says what for
	// (a variable that does not exist yet, a server it cannot reach).
	missing := time.NewTimer(templateMissingAfter)
	defer missing.Stop()
	lastMissing := ""
	for i, r := range runners {
		for !h.allRendered(r) {
			select {
			case <-r.RenderEventCh():
			case <-r.TemplateRenderedCh():
			case err := <-r.ErrCh:
				h.fail(err)
				return false
			case <-r.DoneCh:
				if !h.allRendered(r) {
					h.fail(fmt.Errorf("template runner %d stopped before rendering", i))
					return false
				}
			case <-missing.C:
				if m := missingDeps(r); m != "" && m != lastMissing {
					lastMissing = m
					h.tr.emit(newEvent(EventTemplate, h.tr.now(), "Missing: "+m))
				}
				missing.Reset(templateMissingAfter)
			case <-h.tr.killCh:
				return false
			case <-h.tr.shutdownCh:
				return false
			}
		}
	}
	h.mu.Lock()
	for _, r := range runners {
		h.markSeen(r)
	}
	h.mu.Unlock()
	return true
}

// templateMissingAfter is how long the first render may wait before the
// task's events name what it waits for (a variable in tests).
var templateMissingAfter = 5 * time.Second

// missingDeps lists the data r's templates still wait for, sorted.
func missingDeps(r *manager.Runner) string {
	var out []string
	for _, ev := range r.RenderEvents() {
		if ev.MissingDeps == nil {
			continue
		}
		for _, d := range ev.MissingDeps.List() {
			if s := d.String(); !contains(out, s) {
				out = append(out, s)
			}
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// allRendered reports whether every template of r has rendered (or found
// its file already as it would render it).
func (h *templateHook) allRendered(r *manager.Runner) bool {
	events := r.RenderEvents()
	for id := range r.TemplateConfigMapping() {
		ev, ok := events[id]
		if !ok || ev.LastWouldRender.IsZero() {
			return false
		}
	}
	return true
}

// markSeen records the renders of r so far as the starting point: only
// later ones are changes. Call with h.mu held.
func (h *templateHook) markSeen(r *manager.Runner) {
	events := r.RenderEvents()
	for id, tcs := range r.TemplateConfigMapping() {
		var at time.Time
		if ev, ok := events[id]; ok {
			at = ev.LastDidRender
		}
		for _, tc := range tcs {
			if t := h.byConfig[tc]; t != nil {
				h.lastDid[t] = at
			}
		}
	}
}

// noteRenders returns the templates of r written since the last call (or
// markSeen) and records their renders. Call with h.mu held.
func (h *templateHook) noteRenders(r *manager.Runner) []*structs.Template {
	var changed []*structs.Template
	events := r.RenderEvents()
	for id, tcs := range r.TemplateConfigMapping() {
		ev, ok := events[id]
		if !ok || ev.LastDidRender.IsZero() {
			continue
		}
		for _, tc := range tcs {
			t := h.byConfig[tc]
			if t == nil {
				continue
			}
			if ev.LastDidRender.After(h.lastDid[t]) {
				changed = append(changed, t)
				h.lastDid[t] = ev.LastDidRender
			}
		}
	}
	return changed
}

// watch follows the re-renders of the watched runner until stop.
func (h *templateHook) watch() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.runners {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.watchRunner(r)
		}()
	}
}

func (h *templateHook) watchRunner(r *manager.Runner) {
	for {
		select {
		case <-h.stopCh:
			return
		case <-r.DoneCh: // a once runner, done
			return
		case err := <-r.ErrCh:
			h.tr.Kill(templateFailed(h.tr.now(), err))
			return
		case <-r.TemplateRenderedCh():
			h.mu.Lock()
			changed := h.noteRenders(r)
			h.mu.Unlock()
			if len(changed) > 0 {
				h.onChange(changed)
			}
		}
	}
}

// onChange applies the change modes of the re-rendered templates, as in
// Nomad: a restart wins over signals; signals are sent once each; every
// script runs. It first waits a random part of the largest splay.
func (h *templateHook) onChange(changed []*structs.Template) {
	var splay time.Duration
	restart := false
	var signals []string
	var scripts []*structs.Template
	for _, t := range changed {
		splay = max(splay, t.Splay)
		switch t.ChangeMode {
		case structs.TemplateChangeModeRestart:
			restart = true
		case structs.TemplateChangeModeSignal:
			if !contains(signals, t.ChangeSignal) {
				signals = append(signals, t.ChangeSignal)
			}
		case structs.TemplateChangeModeScript:
			scripts = append(scripts, t)
		}
	}
	if !restart && len(signals) == 0 && len(scripts) == 0 {
		return
	}
	if splay > 0 {
		t := time.NewTimer(rand.N(splay))
		select {
		case <-t.C:
		case <-h.stopCh:
			t.Stop()
			return
		}
	}
	if err := h.loadEnv(); err != nil {
		h.tr.Kill(templateFailed(h.tr.now(), err))
		return
	}
	if restart {
		_ = h.tr.restartFor("Template with change_mode restart re-rendered")
		return
	}
	for _, sig := range signals {
		if err := h.tr.signalFor(sig, "Template re-rendered"); err != nil {
			// As in Nomad: a change the task cannot be told of fails it.
			h.tr.Kill(templateFailed(h.tr.now(), fmt.Errorf("failed to send signal %s: %w", sig, err)))
			return
		}
	}
	for _, t := range scripts {
		h.runScript(t)
	}
}

// runScript runs a template's change_script inside the running task.
func (h *templateHook) runScript(t *structs.Template) {
	cs := t.ChangeScript
	timeout := cs.Timeout
	if timeout <= 0 {
		timeout = templateDefaultScriptTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	defer context.AfterFunc(h.tr.ctx, cancel)()
	var out bytes.Buffer
	w := &limitedWriter{w: &out, n: 4096}
	res, err := h.tr.Exec(ctx, &drivers.ExecOptions{Command: append([]string{cs.Command}, cs.Args...), Stdout: w, Stderr: w})
	now := h.tr.now()
	cmd := strings.Join(append([]string{cs.Command}, cs.Args...), " ")
	if err == nil && res != nil && res.Err == nil && res.ExitCode == 0 {
		h.tr.emit(newEvent(EventTemplate, now, fmt.Sprintf("Template ran script %s on change", cmd)))
		return
	}
	if err == nil && res != nil {
		switch {
		case res.Err != nil:
			err = res.Err
		case ctx.Err() != nil:
			err = fmt.Errorf("timed out after %s", timeout)
		default:
			err = fmt.Errorf("exit code %d", res.ExitCode)
		}
	}
	msg := fmt.Sprintf("Template failed to run script %s on change: %v", cmd, err)
	if s := strings.TrimSpace(out.String()); s != "" {
		msg += ": " + s
	}
	if cs.FailOnError {
		h.tr.Kill(templateFailed(now, fmt.Errorf("%s", msg)))
		return
	}
	h.tr.emit(newEvent(EventTemplate, now, msg))
}

// loadEnv reads the env = true templates' files into the task's
// environment (from the next start on).
func (h *templateHook) loadEnv() error {
	h.mu.Lock()
	paths, order := h.paths, h.order
	h.mu.Unlock()
	var env map[string]string
	for _, t := range order { // the runners' templates: an in-place update keeps them
		p, ok := paths[t]
		if !t.Envvars || !ok {
			continue
		}
		data, err := os.ReadFile(p.dest)
		if err != nil {
			return fmt.Errorf("reading env template %s: %w", t.DestPath, err)
		}
		vars, err := parseDotenv(data)
		if err != nil {
			return fmt.Errorf("env template %s: %w", t.DestPath, err)
		}
		if env == nil {
			env = map[string]string{}
		}
		for k, v := range vars {
			env[k] = v
		}
	}
	h.tr.mu.Lock()
	h.tr.templateEnv = env
	h.tr.mu.Unlock()
	return nil
}

// fail marks the task (not started, or between starts) dead and failed.
func (h *templateHook) fail(err error) {
	ev := newEvent(EventTaskHookFailed, h.tr.now(), fmt.Sprintf("prestart hook %q failed: %v", "template", err))
	ev.FailsTask = true
	ev.Details[DetailFailsTask] = "true"
	h.tr.logger.Error("templates failed", "error", err)
	h.tr.Fail(ev)
}

// stop stops the runners and waits for the watch goroutines. It is safe
// to call more than once, and before start.
func (h *templateHook) stop() {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	h.stopped = true
	close(h.stopCh)
	runners, runDone, dialer := h.runners, h.runDone, h.dialer
	h.mu.Unlock()
	if dialer != nil {
		dialer.closeAll() // ends the blocking queries under way
	}
	for i, r := range runners {
		r.StopImmediately()
		// Start may be blocked handing over an error nobody reads now.
		for drained := false; !drained; {
			select {
			case <-r.ErrCh:
			case <-runDone[i]:
				drained = true
			}
		}
	}
	h.wg.Wait()
}

// templateFailed is the kill reason of a task whose templates failed.
func templateFailed(now time.Time, err error) *structs.TaskEvent {
	e := newEvent(EventTemplate, now, fmt.Sprintf("Template failed: %v", err))
	e.FailsTask = true
	e.Details[DetailFailsTask] = "true"
	return e
}

// baseEnv is the task's environment without the templates' variables:
// what templates read with env and their paths are interpolated with.
func (tr *TaskRunner) baseEnv() *taskenv.Env {
	tr.mu.Lock()
	alloc, task := tr.alloc, tr.task
	tr.mu.Unlock()
	td := tr.allocDir.TaskDir(tr.name)
	return taskenv.Build(taskenv.Input{
		Alloc: alloc, Task: task, Node: tr.node,
		AllocDir: tr.allocDir.SharedDir(), TaskDir: td.Dir, LocalDir: td.LocalDir, SecretsDir: td.SecretsDir,
		HostEnv: tr.hostEnv, UnixAddr: tr.unixAddr,
	})
}

// nomadToken is the task's default workload identity, which templates
// present to the servers ("" when it was not signed).
func (tr *TaskRunner) nomadToken() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.alloc.SignedIdentities[structs.IdentityKey(tr.name, tr.task.Identity)]
}

// restartFor restarts the running task outside the restart policy, with
// why as the reason of its events.
func (tr *TaskRunner) restartFor(why string) error {
	return tr.requestRestart(func() { tr.restartReason = why })
}

// signalFor sends sig to the running task, recording why. It returns the
// driver's error; a task not running (or being killed) is not signalled
// and is no error.
func (tr *TaskRunner) signalFor(sig, why string) error {
	tr.mu.Lock()
	h := tr.handle
	tr.mu.Unlock()
	if h == nil || tr.killed() {
		return nil
	}
	e := newEvent(EventSignaling, tr.now(), fmt.Sprintf("Task being sent signal %s: %s", sig, why))
	e.Details[DetailSignal] = sig
	tr.emit(e)
	if err := tr.driver.SignalTask(h.TaskID, sig); err != nil {
		if errors.Is(err, drivers.ErrTaskNotFound) {
			return nil // it exited meanwhile: its restart renders anew
		}
		tr.logger.Warn("signalling task for a template change", "signal", sig, "error", err)
		return err
	}
	return nil
}

// limitedWriter keeps the first n bytes written and drops the rest.
type limitedWriter struct {
	mu sync.Mutex
	w  io.Writer
	n  int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n > 0 {
		k := min(len(p), l.n)
		_, _ = l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
