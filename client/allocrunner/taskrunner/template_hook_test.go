package taskrunner

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/allocrunner/allocdir"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// fakeVars serves GET /v1/var/<path> as a Drover server does: blocking
// queries on ?index= (answered when the index passes it, or after wait),
// X-Nomad-Index on every answer, 404 for a missing variable. It records
// the tokens presented and counts the queries under way.
type fakeVars struct {
	mu       sync.Mutex
	index    uint64
	vars     map[string]map[string]string
	changed  chan struct{} // closed and replaced on every change
	tokens   map[string]bool
	inflight int
}

func newFakeVars(t *testing.T) (*fakeVars, *httptest.Server) {
	f := &fakeVars{index: 1, vars: map[string]map[string]string{}, changed: make(chan struct{}), tokens: map[string]bool{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeVars) put(path string, items map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.index++
	f.vars[path] = items
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeVars) sawToken(tok string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokens[tok]
}

func (f *fakeVars) queriesUnderWay() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inflight
}

func (f *fakeVars) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutPrefix(r.URL.Path, "/v1/var/")
	if !ok || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	min, _ := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
	wait := time.Minute
	if d, err := time.ParseDuration(r.URL.Query().Get("wait")); err == nil && d > 0 {
		wait = d
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	f.mu.Lock()
	f.tokens[r.Header.Get("X-Nomad-Token")] = true
	f.inflight++
	for timedOut := false; min > 0 && f.index <= min && !timedOut; {
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			timedOut = true
		case <-r.Context().Done():
			f.mu.Lock()
			f.inflight--
			f.mu.Unlock()
			return
		}
		f.mu.Lock()
	}
	f.inflight--
	index, items := f.index, f.vars[path]
	f.mu.Unlock()
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(index, 10))
	if items == nil {
		http.Error(w, "variable not found", http.StatusNotFound)
		return
	}
	_ = json.NewEncoder(w).Encode(&api.Variable{Namespace: "default", Path: path, Items: items, ModifyIndex: index})
}

// execDriver is the recording mock driver with exec: every command
// succeeds and is recorded.
type execDriver struct {
	*recordingDriver
	mu    sync.Mutex
	execs [][]string
}

func (d *execDriver) ExecTask(_ context.Context, _ string, opts *drivers.ExecOptions) (*drivers.ExitResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.execs = append(d.execs, opts.Command)
	if opts.Command[0] == "/bin/false" {
		_, _ = opts.Stderr.Write([]byte("it failed"))
		return &drivers.ExitResult{ExitCode: 1}, nil
	}
	return &drivers.ExitResult{}, nil
}

func (d *execDriver) Execs() [][]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([][]string(nil), d.execs...)
}

const greetingTmpl = `{{ with nomadVar "nomad/jobs/job" }}{{ .greeting }}{{ end }}`

// newTemplateRunner is newRunner with templates rendered against srv.
func newTemplateRunner(t *testing.T, task *structs.Task, d drivers.Driver, srv *httptest.Server, sandboxOff bool) (*TaskRunner, *allocdir.AllocDir) {
	t.Helper()
	dir, err := allocdir.New(t.TempDir(), "a1")
	require.NoError(t, err)
	require.NoError(t, dir.Build([]string{task.Name}))
	return templateRunnerIn(t, task, d, srv, sandboxOff, dir, newFakeDB()), dir
}

// templateRunnerIn is newTemplateRunner on an existing alloc dir and
// state DB (a restarted client).
func templateRunnerIn(t *testing.T, task *structs.Task, d drivers.Driver, srv *httptest.Server, sandboxOff bool, dir *allocdir.AllocDir, db StateDB) *TaskRunner {
	t.Helper()
	task.Identity = &structs.WorkloadIdentity{Name: structs.WorkloadIdentityDefaultName}
	alloc := testAlloc(task)
	alloc.SignedIdentities = map[string]string{task.Name: "wi-token"}
	addr := ""
	if srv != nil {
		addr = srv.Listener.Addr().String()
	}
	tr, err := New(&Config{
		Alloc: alloc, TaskName: task.Name, Driver: d, AllocDir: dir, StateDB: db,
		Templates: &TemplateConfig{
			Dial: func(ctx context.Context) (net.Conn, error) {
				var nd net.Dialer
				return nd.DialContext(ctx, "tcp", addr)
			},
			DisableFileSandbox: sandboxOff,
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		tr.Kill(nil)
		<-runDone(tr)
	})
	return tr
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 20*time.Second, 10*time.Millisecond, what)
}

func hasEvent(st *structs.TaskState, typ, msg string) bool {
	for _, e := range st.Events {
		if e.Type == typ && strings.Contains(e.DisplayMessage, msg) {
			return true
		}
	}
	return false
}

// TestTemplateRendersBeforeStartAndRestartsOnChange: the task starts only
// once its templates rendered (the variable exists only later), with the
// env template's variables in its environment; a new value re-renders the
// file and restarts the task (change_mode restart) with the new value;
// the token presented is the task's workload identity. When the task is
// killed the runners stop: no query stays under way.
func TestTemplateRendersBeforeStartAndRestartsOnChange(t *testing.T) {
	nobody := 65534
	if os.Geteuid() != 0 {
		nobody = -1 // chown to another user needs root: keep the owner
	}
	old := templateMissingAfter
	templateMissingAfter = 50 * time.Millisecond
	t.Cleanup(func() { templateMissingAfter = old })
	vars, srv := newFakeVars(t)
	d := &recordingDriver{Driver: mock.New(nil)}
	task := &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{}, Templates: []*structs.Template{
		{EmbeddedTmpl: greetingTmpl, DestPath: "local/greeting.txt", ChangeMode: "restart", Perms: "0600", Uid: &nobody, Gid: &nobody},
		{EmbeddedTmpl: "GREETING=" + greetingTmpl + "\n", DestPath: "${NOMAD_SECRETS_DIR}/app.env", ChangeMode: "restart", Envvars: true},
	}}
	tr, dir := newTemplateRunner(t, task, d, srv, false)
	go tr.Run()

	waitFor(t, "the hook asks for the variable", func() bool { return vars.sawToken("wi-token") })
	waitFor(t, "the events say what the task waits for", func() bool {
		return hasEvent(tr.State(), EventTemplate, "Missing: nomad.var.block(nomad/jobs/job@default.global)")
	})
	assert.Empty(t, d.Started(), "no start before the first render")
	assert.Equal(t, StatePending, tr.State().State)

	vars.put("nomad/jobs/job", map[string]string{"greeting": "hello"})
	waitFor(t, "the task starts", func() bool { return len(d.Started()) == 1 })
	td := dir.TaskDir("web")
	got, err := os.ReadFile(filepath.Join(td.LocalDir, "greeting.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hello", string(got))
	fi, err := os.Stat(filepath.Join(td.LocalDir, "greeting.txt"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
		assert.Equal(t, uint32(nobody), st.Uid, "uid")
		assert.Equal(t, uint32(nobody), st.Gid, "gid")
	}
	assert.Equal(t, "hello", d.Started()[0].Env["GREETING"])

	// An in-place update (new values of the task, the same templates)
	// before the change: the env template still reaches the next start.
	tr.mu.Lock()
	a := *tr.alloc
	tr.mu.Unlock()
	job, tg := *a.Job, *a.Job.TaskGroups[0]
	nt := *tg.Tasks[0]
	nt.Meta = map[string]string{"v": "2"}
	nt.Templates = nil
	for _, tm := range tg.Tasks[0].Templates {
		c := *tm
		nt.Templates = append(nt.Templates, &c)
	}
	tg.Tasks = []*structs.Task{&nt}
	job.TaskGroups = []*structs.TaskGroup{&tg}
	a.Job = &job
	tr.Update(&a)

	vars.put("nomad/jobs/job", map[string]string{"greeting": "bye"})
	waitFor(t, "the task restarts", func() bool { return len(d.Started()) == 2 })
	assert.Equal(t, "bye", d.Started()[1].Env["GREETING"])
	got, err = os.ReadFile(filepath.Join(td.LocalDir, "greeting.txt"))
	require.NoError(t, err)
	assert.Equal(t, "bye", string(got))
	st := tr.State()
	assert.True(t, hasEvent(st, EventRestartSignal, "Template with change_mode restart re-rendered"), "%v", types(st))
	assert.Zero(t, st.Restarts-1, "one restart")

	tr.Kill(nil)
	<-tr.WaitCh()
	waitFor(t, "no query under way once the task stopped", func() bool { return vars.queriesUnderWay() == 0 })
	tr.templates.mu.Lock()
	done := tr.templates.runDone
	tr.templates.mu.Unlock()
	require.Len(t, done, 1)
	select {
	case <-done[0]:
	default:
		t.Fatal("the template runner still runs after the task stopped")
	}
}

// TestTemplateSignalAndScriptOnChange: a re-render sends change_signal
// through the driver (once), and runs the change_script in the task.
func TestTemplateSignalAndScriptOnChange(t *testing.T) {
	vars, srv := newFakeVars(t)
	vars.put("nomad/jobs/job", map[string]string{"greeting": "hello"})
	m := mock.New(nil)
	d := &execDriver{recordingDriver: &recordingDriver{Driver: m}}
	task := &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{}, Templates: []*structs.Template{
		{EmbeddedTmpl: greetingTmpl, DestPath: "local/a", ChangeMode: "signal", ChangeSignal: "SIGHUP"},
		{EmbeddedTmpl: "x" + greetingTmpl, DestPath: "local/b", ChangeMode: "signal", ChangeSignal: "SIGHUP"},
		{EmbeddedTmpl: "y" + greetingTmpl, DestPath: "local/c", ChangeMode: "script",
			ChangeScript: &structs.ChangeScript{Command: "/bin/reload", Args: []string{"-v"}, Timeout: time.Second}},
	}}
	tr, _ := newTemplateRunner(t, task, d, srv, false)
	go tr.Run()
	waitFor(t, "the task starts", func() bool { return tr.State().State == StateRunning })
	assert.Empty(t, m.Signals("a1/web"), "the first render changes nothing")

	vars.put("nomad/jobs/job", map[string]string{"greeting": "bye"})
	waitFor(t, "the script runs", func() bool { return len(d.Execs()) == 1 })
	assert.Equal(t, []string{"SIGHUP"}, m.Signals("a1/web"), "one signal for two templates")
	assert.Equal(t, []string{"/bin/reload", "-v"}, d.Execs()[0])
	st := tr.State()
	assert.True(t, hasEvent(st, EventSignaling, "Template re-rendered"), "%v", types(st))
	assert.True(t, hasEvent(st, EventTemplate, "Template ran script /bin/reload -v on change"), "%v", types(st))
	assert.Len(t, d.Started(), 1, "no restart")
}

// TestTemplateSourceSandbox: a source outside the allocation directory,
// as written or through a symlink, fails the task before it starts
// unless the client disables the file sandbox; a source inside renders.
func TestTemplateSourceSandbox(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "host.tpl")
	require.NoError(t, os.WriteFile(outside, []byte("from the host"), 0o644))
	cases := []struct {
		name       string
		source     string
		link       bool // local/link -> the host file's directory
		sandboxOff bool
		want       string // rendered content, or "" when refused
	}{
		{name: "absolute", source: outside},
		{name: "escaping", source: "../../../" + filepath.Base(outside)},
		{name: "symlink", source: "local/link/host.tpl", link: true},
		{name: "inside", source: "local/in.tpl", want: "inside"},
		{name: "absolute, sandbox off", source: outside, sandboxOff: true, want: "from the host"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &recordingDriver{Driver: mock.New(nil)}
			task := &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{}, Templates: []*structs.Template{
				{SourcePath: tc.source, DestPath: "local/out", ChangeMode: "noop"},
			}}
			tr, dir := newTemplateRunner(t, task, d, nil, tc.sandboxOff)
			td := dir.TaskDir("web")
			require.NoError(t, os.WriteFile(filepath.Join(td.LocalDir, "in.tpl"), []byte("inside"), 0o644))
			if tc.link {
				require.NoError(t, os.Symlink(filepath.Dir(outside), filepath.Join(td.LocalDir, "link")))
			}
			go tr.Run()
			if tc.want == "" {
				waitFor(t, "the task fails", func() bool { return tr.State().State == StateDead })
				st := tr.State()
				assert.True(t, st.Failed)
				assert.True(t, hasEvent(st, EventTaskHookFailed, "template source path escapes alloc directory"), "%+v", st.Events)
				assert.Empty(t, d.Started())
				return
			}
			waitFor(t, "the task starts", func() bool { return len(d.Started()) == 1 })
			got, err := os.ReadFile(filepath.Join(td.LocalDir, "out"))
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
}

// TestTemplateDestinationSymlinkRefused: a destination whose directory
// was replaced by a symlink out of the allocation directory is refused.
func TestTemplateDestinationSymlinkRefused(t *testing.T) {
	outside := t.TempDir()
	d := &recordingDriver{Driver: mock.New(nil)}
	task := &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{}, Templates: []*structs.Template{
		{EmbeddedTmpl: "x", DestPath: "local/evil/out", ChangeMode: "noop"},
	}}
	tr, dir := newTemplateRunner(t, task, d, nil, false)
	require.NoError(t, os.Symlink(outside, filepath.Join(dir.TaskDir("web").LocalDir, "evil")))
	go tr.Run()
	waitFor(t, "the task fails", func() bool { return tr.State().State == StateDead })
	assert.True(t, hasEvent(tr.State(), EventTaskHookFailed, "template destination path escapes alloc directory"))
	_, err := os.Stat(filepath.Join(outside, "out"))
	assert.True(t, os.IsNotExist(err), "nothing written outside")
}

// TestTemplateRefusedFunctionsAtRender: a source file calling a Consul
// function (not seen at registration) fails the task naming it, and the
// default denylist refuses writeToFile.
func TestTemplateRefusedFunctionsAtRender(t *testing.T) {
	for name, tc := range map[string]struct{ text, want string }{
		"consul":      {`{{ key "a" }}`, `function "key": this cluster has no Consul integration`},
		"vault":       {`{{ with secret "a" }}{{ end }}`, `function "secret": this cluster has no Vault integration`},
		"denied":      {`{{ writeToFile "/tmp/x" "" "" "0644" "" }}`, `error calling writeToFile: function is disabled`},
		"env isolate": {`{{ env "PATH" }}`, ""},
	} {
		t.Run(name, func(t *testing.T) {
			d := &recordingDriver{Driver: mock.New(nil)}
			task := &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{}, Templates: []*structs.Template{
				{SourcePath: "local/in.tpl", DestPath: "local/out", ChangeMode: "noop"},
			}}
			tr, dir := newTemplateRunner(t, task, d, nil, false)
			td := dir.TaskDir("web")
			require.NoError(t, os.WriteFile(filepath.Join(td.LocalDir, "in.tpl"), []byte(tc.text), 0o644))
			go tr.Run()
			if tc.want == "" {
				waitFor(t, "the task starts", func() bool { return len(d.Started()) == 1 })
				got, err := os.ReadFile(filepath.Join(td.LocalDir, "out"))
				require.NoError(t, err)
				assert.Empty(t, string(got), "the agent's PATH is not the task's (mock inherits no host env)")
				return
			}
			waitFor(t, "the task fails", func() bool { return tr.State().State == StateDead })
			st := tr.State()
			assert.True(t, st.Failed)
			assert.True(t, hasEvent(st, EventTaskHookFailed, tc.want), "%s", eventMessages(st))
		})
	}
}

func TestParseDotenv(t *testing.T) {
	got, err := parseDotenv([]byte("# comment\n\nA=1\nexport B = two \nC=\"quoted \\\"x\\\"\"\nD='single # not a comment'\nE=val # comment\nF=\n"))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"A": "1", "B": "two", "C": `quoted "x"`, "D": "single # not a comment", "E": "val", "F": ""}, got)
	_, err = parseDotenv([]byte("no equals sign\n"))
	assert.ErrorContains(t, err, "line 1")
}

func eventMessages(st *structs.TaskState) string {
	var b strings.Builder
	for _, e := range st.Events {
		b.WriteString(e.Type + ": " + e.DisplayMessage + "\n")
	}
	return b.String()
}

// TestTemplateOnceIsNotWatched: a once = true template renders once and
// its runner stops; a later change re-renders only the watched template
// (noop: no restart) and leaves the once file as it was.
func TestTemplateOnceIsNotWatched(t *testing.T) {
	vars, srv := newFakeVars(t)
	vars.put("nomad/jobs/job", map[string]string{"greeting": "hello"})
	d := &recordingDriver{Driver: mock.New(nil)}
	task := &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{}, Templates: []*structs.Template{
		{EmbeddedTmpl: greetingTmpl, DestPath: "local/once", ChangeMode: "restart", Once: true},
		{EmbeddedTmpl: greetingTmpl, DestPath: "local/watched", ChangeMode: "noop"},
	}}
	tr, dir := newTemplateRunner(t, task, d, srv, false)
	go tr.Run()
	waitFor(t, "the task starts", func() bool { return len(d.Started()) == 1 })
	tr.templates.mu.Lock()
	done := tr.templates.runDone
	tr.templates.mu.Unlock()
	require.Len(t, done, 2, "a watched runner and a once runner")
	waitFor(t, "the once runner ends by itself", func() bool {
		select {
		case <-done[1]:
			return true
		default:
			return false
		}
	})

	vars.put("nomad/jobs/job", map[string]string{"greeting": "bye"})
	local := dir.TaskDir("web").LocalDir
	waitFor(t, "the watched template re-renders", func() bool {
		b, _ := os.ReadFile(filepath.Join(local, "watched"))
		return string(b) == "bye"
	})
	b, err := os.ReadFile(filepath.Join(local, "once"))
	require.NoError(t, err)
	assert.Equal(t, "hello", string(b))
	assert.Len(t, d.Started(), 1, "noop and once change nothing")
}

// TestTemplateScriptFirstRenderAndFailOnError: run_on_first_render runs
// the script once the task started; a failing script with fail_on_error
// kills the task, failed, naming the script and its output.
func TestTemplateScriptFirstRenderAndFailOnError(t *testing.T) {
	vars, srv := newFakeVars(t)
	vars.put("nomad/jobs/job", map[string]string{"greeting": "hello"})
	d := &execDriver{recordingDriver: &recordingDriver{Driver: mock.New(nil)}}
	task := &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{}, Templates: []*structs.Template{
		{EmbeddedTmpl: greetingTmpl, DestPath: "local/a", ChangeMode: "script",
			ChangeScript: &structs.ChangeScript{Command: "/bin/first", RunOnFirstRender: true}},
		{EmbeddedTmpl: "x" + greetingTmpl, DestPath: "local/b", ChangeMode: "script",
			ChangeScript: &structs.ChangeScript{Command: "/bin/false", FailOnError: true}},
	}}
	tr, _ := newTemplateRunner(t, task, d, srv, false)
	go tr.Run()
	waitFor(t, "the first-render script runs after the start", func() bool { return len(d.Execs()) == 1 })
	assert.Equal(t, []string{"/bin/first"}, d.Execs()[0])
	assert.Equal(t, StateRunning, tr.State().State)

	vars.put("nomad/jobs/job", map[string]string{"greeting": "bye"})
	waitFor(t, "the failing script kills the task", func() bool { return tr.State().State == StateDead })
	st := tr.State()
	assert.True(t, st.Failed, "fail_on_error fails the task")
	assert.True(t, hasEvent(st, EventTemplate, "Template failed: Template failed to run script /bin/false on change: exit code 1: it failed"), "%s", eventMessages(st))
}

// TestTemplateSignalFailureKillsTask: a change_signal the driver cannot
// send kills the task, failed, saying so (as in Nomad), instead of the
// change going unnoticed.
func TestTemplateSignalFailureKillsTask(t *testing.T) {
	vars, srv := newFakeVars(t)
	vars.put("nomad/jobs/job", map[string]string{"greeting": "hello"})
	m := mock.New(nil)
	task := &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{}, Templates: []*structs.Template{
		{EmbeddedTmpl: greetingTmpl, DestPath: "local/a", ChangeMode: "signal", ChangeSignal: "SIGBOGUS"},
	}}
	tr, _ := newTemplateRunner(t, task, m, srv, false)
	go tr.Run()
	waitFor(t, "the task starts", func() bool { return tr.State().State == StateRunning })

	vars.put("nomad/jobs/job", map[string]string{"greeting": "bye"})
	waitFor(t, "the failed signal kills the task", func() bool { return tr.State().State == StateDead })
	st := tr.State()
	assert.True(t, st.Failed, "a signal that cannot be sent fails the task")
	assert.True(t, hasEvent(st, EventTemplate, "Template failed: failed to send signal SIGBOGUS"), "%s", eventMessages(st))
}

// TestServerDialer: the dialer skips a server it cannot reach and speaks
// TLS to one that wants it, checking its certificate.
func TestServerDialer(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("hello over tls"))
	}))
	t.Cleanup(srv.Close)
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := dead.Addr().String()
	require.NoError(t, dead.Close())

	tlsCfg := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	dial := ServerDialer([]string{deadAddr, "https://" + srv.Listener.Addr().String()}, tlsCfg)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) }}}
	t.Cleanup(hc.CloseIdleConnections)
	resp, err := hc.Get("http://drover-server/")
	require.NoError(t, err)
	defer resp.Body.Close()
	body := make([]byte, 64)
	n, _ := resp.Body.Read(body)
	assert.Equal(t, "hello over tls", string(body[:n]))

	// Without the CA the certificate is refused.
	_, err = ServerDialer([]string{srv.Listener.Addr().String()}, &tls.Config{})(context.Background())
	assert.ErrorContains(t, err, "certificate")
}

// TestTemplateWatchedAgainAfterRestore: a client restart leaves the task
// running; the new runner reattaches, watches the templates again without
// treating the files in place as a change, and restarts the task on the
// next change.
func TestTemplateWatchedAgainAfterRestore(t *testing.T) {
	vars, srv := newFakeVars(t)
	vars.put("nomad/jobs/job", map[string]string{"greeting": "hello"})
	d := &recordingDriver{Driver: mock.New(nil)}
	task := func() *structs.Task {
		return &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{}, Templates: []*structs.Template{
			{EmbeddedTmpl: greetingTmpl, DestPath: "local/g", ChangeMode: "restart"},
		}}
	}
	dir, err := allocdir.New(t.TempDir(), "a1")
	require.NoError(t, err)
	require.NoError(t, dir.Build([]string{"web"}))
	db := newFakeDB()
	tr1 := templateRunnerIn(t, task(), d, srv, false, dir, db)
	go tr1.Run()
	waitFor(t, "the task starts", func() bool { return tr1.State().State == StateRunning })
	tr1.Shutdown()
	<-tr1.WaitCh()

	tr2 := templateRunnerIn(t, task(), d, srv, false, dir, db)
	require.NoError(t, tr2.Restore())
	go tr2.Run()
	waitFor(t, "the new runner watches the variable", func() bool { return vars.queriesUnderWay() == 1 })
	assert.Len(t, d.Started(), 1, "reattached, not started again")

	vars.put("nomad/jobs/job", map[string]string{"greeting": "bye"})
	waitFor(t, "the change restarts the task", func() bool { return len(d.Started()) == 2 })
}
