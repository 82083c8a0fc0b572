package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/client/allocrunner"
	"github.com/drover-project/drover/client/allocrunner/allocdir"
	"github.com/drover-project/drover/client/allocrunner/health"
	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/client/fingerprint"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/logrotate"
)

// httpError is an error answer: Msg goes to the caller.
type httpError struct {
	Code int
	Msg  string
}

func (e *httpError) Error() string { return e.Msg }

func badRequest(format string, args ...any) error {
	return &httpError{Code: http.StatusBadRequest, Msg: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &httpError{Code: http.StatusNotFound, Msg: fmt.Sprintf(format, args...)}
}

// writeError answers err as plain text: its code when it is an httpError,
// 500 otherwise.
func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var he *httpError
	if errors.As(err, &he) {
		code = he.Code
	}
	http.Error(w, err.Error(), code)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v) // the status is sent; nothing more to tell the caller
}

// Handler serves the client endpoints the servers proxy to this agent
// (with Config.ACLEnabled, each checks the caller's token: read-logs for
// logs, read-job for alloc stats and checks, node read for host stats):
//
//	GET /v1/client/fs/logs/{alloc}?task=&type=stdout|stderr&plain=&follow=&origin=start|end&offset=
//	GET /v1/client/allocation/{id}/stats
//	GET /v1/client/allocation/{id}/checks
//	GET /v1/client/stats
//	GET /v1/client/fs/{ls,stat,cat,readat,stream}/{alloc}?path=
//	PUT /v1/client/allocation/{id}/restart
//	PUT /v1/client/allocation/{id}/signal
//	GET, POST /v1/client/metadata
//	GET /v1/client/allocation/{id}/exec (a websocket; see exec.go)
//	GET /v1/client/allocation/{id}/snapshot (a migrate token; see migrate.go)
func (c *Client) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/client/fs/logs/{alloc}", c.handleLogs)
	mux.HandleFunc("GET /v1/client/allocation/{id}/stats", c.handleAllocStats)
	mux.HandleFunc("GET /v1/client/allocation/{id}/checks", c.handleAllocChecks)
	mux.HandleFunc("GET /v1/client/stats", c.handleHostStats)
	mux.HandleFunc("PUT /v1/client/allocation/{id}/restart", c.handleAllocRestart)
	mux.HandleFunc("POST /v1/client/allocation/{id}/restart", c.handleAllocRestart)
	mux.HandleFunc("PUT /v1/client/allocation/{id}/signal", c.handleAllocSignal)
	mux.HandleFunc("POST /v1/client/allocation/{id}/signal", c.handleAllocSignal)
	mux.HandleFunc("GET /v1/client/fs/ls/{alloc}", c.handleFSList)
	mux.HandleFunc("GET /v1/client/fs/stat/{alloc}", c.handleFSStat)
	mux.HandleFunc("GET /v1/client/fs/cat/{alloc}", c.handleFSCat)
	mux.HandleFunc("GET /v1/client/fs/readat/{alloc}", c.handleFSReadAt)
	mux.HandleFunc("GET /v1/client/fs/stream/{alloc}", c.handleFSStream)
	mux.HandleFunc("GET /v1/client/metadata", c.handleMetaRead)
	mux.HandleFunc("POST /v1/client/metadata", c.handleMetaApply)
	mux.HandleFunc("PUT /v1/client/metadata", c.handleMetaApply)
	mux.HandleFunc("GET /v1/client/allocation/{id}/exec", c.handleAllocExec)
	mux.HandleFunc("GET /v1/client/allocation/{id}/snapshot", c.handleAllocSnapshot)
	return mux
}

// allocRunner returns the runner of the allocation, or a 404; with ACLs on
// the request's token must hold cap in the allocation's namespace (403).
func (c *Client) allocRunner(r *http.Request, id, cap string) (*allocrunner.AllocRunner, error) {
	ar := c.runner(id)
	if ar == nil {
		return nil, notFound("Unknown allocation %q", id)
	}
	if err := c.requireNamespace(r, ar.Alloc().Namespace, cap); err != nil {
		return nil, err
	}
	return ar, nil
}

func (c *Client) handleAllocStats(w http.ResponseWriter, r *http.Request) {
	ar, err := c.allocRunner(r, r.PathValue("id"), acl.NamespaceCapabilityReadJob)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, allocStats(ar.Alloc(), c.cfg.Now().UnixNano()))
}

// handleAllocChecks answers the latest results of the allocation's
// Nomad-native service checks, by check ID.
func (c *Client) handleAllocChecks(w http.ResponseWriter, r *http.Request) {
	ar, err := c.allocRunner(r, r.PathValue("id"), acl.NamespaceCapabilityReadJob)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, checkStatuses(ar.CheckResults()))
}

func checkStatuses(results []health.CheckResult) api.AllocCheckStatuses {
	out := make(api.AllocCheckStatuses, len(results))
	for _, r := range results {
		var ts int64
		if !r.Timestamp.IsZero() {
			ts = r.Timestamp.Unix()
		}
		out[r.Def.ID] = api.AllocCheckStatus{
			ID: r.Def.ID, Check: r.Def.Name, Group: r.Def.Group, Mode: r.Def.Mode, Output: r.Output,
			Service: r.Def.Service, Task: r.Def.Task, Status: r.Status, StatusCode: r.StatusCode, Timestamp: ts,
		}
	}
	return out
}

func (c *Client) handleHostStats(w http.ResponseWriter, r *http.Request) {
	if err := c.requireNodeRead(r); err != nil {
		writeError(w, err)
		return
	}
	st, err := hostStats(c.cfg.procRoot, c.cfg.DataDir, c.Node().NodeResources.Cpu.CpuShares)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, st)
}

// logParams are the query parameters of the logs endpoint.
type logParams struct {
	task, stream, origin string
	plain, follow        bool
	offset               int64
}

// parseLogParams reads and checks the logs query; defaultTask is used when
// task is empty ("" when the group has several tasks).
func parseLogParams(r *http.Request, defaultTask string) (logParams, error) {
	q := r.URL.Query()
	p := logParams{task: q.Get("task"), stream: q.Get("type"), origin: q.Get("origin")}
	if p.task == "" {
		p.task = defaultTask
	}
	if p.task == "" {
		return p, badRequest("must provide task name")
	}
	switch p.stream {
	case "stdout", "stderr":
	case "":
		p.stream = "stdout"
	default:
		return p, badRequest("type must be \"stdout\" or \"stderr\", got %q", p.stream)
	}
	switch p.origin {
	case "start", "end":
	case "":
		p.origin = "start"
	default:
		return p, badRequest("origin must be \"start\" or \"end\", got %q", p.origin)
	}
	var err error
	for name, dst := range map[string]*bool{"plain": &p.plain, "follow": &p.follow} {
		if v := q.Get(name); v != "" {
			if *dst, err = strconv.ParseBool(v); err != nil {
				return p, badRequest("%s must be a bool, got %q", name, v)
			}
		}
	}
	if v := q.Get("offset"); v != "" {
		if p.offset, err = strconv.ParseInt(v, 10, 64); err != nil || p.offset < 0 {
			return p, badRequest("offset must be a non-negative integer, got %q", v)
		}
	}
	return p, nil
}

func (c *Client) handleLogs(w http.ResponseWriter, r *http.Request) {
	allocID := r.PathValue("alloc")
	ar, err := c.allocRunner(r, allocID, acl.NamespaceCapabilityReadLogs)
	if err != nil {
		writeError(w, err)
		return
	}
	alloc := ar.Alloc()
	defaultTask := ""
	if tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup); tg != nil && len(tg.Tasks) == 1 {
		defaultTask = tg.Tasks[0].Name
	}
	p, err := parseLogParams(r, defaultTask)
	if err != nil {
		writeError(w, err)
		return
	}
	if tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup); tg == nil || tg.LookupTask(p.task) == nil {
		writeError(w, notFound("unknown task name %q", p.task))
		return
	}
	first, err := ar.LogPath(p.task, p.stream)
	if err != nil {
		writeError(w, err)
		return
	}
	// The stream's rotated files, oldest first, read as one.
	// Reached from the shared dir (which the tasks may write), so that a
	// task's symlink cannot make the client serve a file outside it.
	shared := filepath.Join(c.cfg.AllocDir(), allocID, allocdir.SharedDirName)
	src, err := logrotate.NewReaderIn(shared, first, p.origin == "end", p.offset)
	if err != nil {
		writeError(w, err)
		return
	}
	ls := &logStream{
		src:       src,
		frameName: func(path string) string { return relLogName(c.cfg.AllocDir(), allocID, path) },
		params:    p,
		done:      ar.WaitCh(),
		poll:      c.cfg.timing.logPoll,
		heartbeat: c.cfg.timing.logHeartbeat,
	}
	if err := ls.serve(r.Context(), w); err != nil {
		c.logger.Debug("log stream ended", "alloc_id", allocID, "task", p.task, "error", err)
	}
}

// hostStats builds the host statistics from /proc under root and the disk
// holding dataDir; cpuShares is the node's total MHz.
func hostStats(root, dataDir string, cpuShares int64) (*api.HostStats, error) {
	if root == "" {
		root = "/"
	}
	mem, err := fingerprint.ReadMeminfo(root)
	if err != nil {
		return nil, err
	}
	st := &api.HostStats{
		Memory: &api.HostMemoryStats{Total: mem.Total, Available: mem.Available, Used: mem.Used(), Free: mem.Free},
		CPU:    []*api.HostCPUStats{},
	}
	if up, err := fingerprint.ReadUptime(root); err == nil {
		st.Uptime = up
	}
	if times, err := fingerprint.ReadCPUTimes(root); err == nil {
		for _, t := range times {
			total := float64(t.Total())
			if total == 0 {
				continue
			}
			pct := func(v uint64) float64 { return 100 * float64(v) / total }
			cs := &api.HostCPUStats{CPU: t.Name, User: pct(t.User + t.Nice), System: pct(t.System + t.IRQ + t.SoftIRQ), Idle: pct(t.Idle + t.IOWait)}
			if t.Name == "cpu" {
				st.CPUTicksConsumed = float64(cpuShares) * (100 - cs.Idle) / 100
				continue
			}
			st.CPU = append(st.CPU, cs)
		}
	}
	if d, err := fingerprint.DiskUsage(dataDir); err == nil {
		ds := &api.HostDiskStats{Device: dataDir, Mountpoint: dataDir, Size: d.Size, Used: d.Used, Available: d.Available}
		if d.Size > 0 {
			ds.UsedPercent = 100 * float64(d.Used) / float64(d.Size)
		}
		st.DiskStats = []*api.HostDiskStats{ds}
		st.AllocDirStats = ds
	}
	return st, nil
}

// handleAllocRestart serves PUT /v1/client/allocation/{id}/restart
// ({"TaskName": ..., "AllTasks": ...}).
func (c *Client) handleAllocRestart(w http.ResponseWriter, r *http.Request) {
	ar, err := c.allocRunner(r, r.PathValue("id"), acl.NamespaceCapabilityAllocLifecycle)
	if err != nil {
		writeError(w, err)
		return
	}
	var req api.AllocationRestartRequest
	if r.ContentLength != 0 {
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil && err != io.EOF {
			writeError(w, badRequest("Request decode failed: %v", err))
			return
		}
	}
	if req.TaskName != "" && req.AllTasks {
		writeError(w, badRequest("TaskName and AllTasks: name a task or ask for all tasks, not both"))
		return
	}
	writeActionResult(w, ar.Restart(req.TaskName, req.AllTasks))
}

// handleAllocSignal serves PUT /v1/client/allocation/{id}/signal
// ({"Task": ..., "Signal": ...}).
func (c *Client) handleAllocSignal(w http.ResponseWriter, r *http.Request) {
	ar, err := c.allocRunner(r, r.PathValue("id"), acl.NamespaceCapabilityAllocLifecycle)
	if err != nil {
		writeError(w, err)
		return
	}
	var req api.AllocSignalRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, badRequest("Request decode failed: %v", err))
		return
	}
	if req.Signal == "" {
		req.Signal = "SIGKILL" // Nomad's default
	}
	if _, err := drivers.ParseSignal(req.Signal); err != nil {
		writeError(w, badRequest("Signal: %v", err))
		return
	}
	writeActionResult(w, ar.Signal(req.Task, req.Signal))
}

// writeActionResult answers a restart or signal: {} on success, 400 for an
// unknown task or one not running.
func writeActionResult(w http.ResponseWriter, err error) {
	switch {
	case err == nil:
		writeJSON(w, struct{}{})
	case errors.Is(err, allocrunner.ErrUnknownTask), errors.Is(err, taskrunner.ErrTaskNotRunning):
		writeError(w, badRequest("%v", err))
	default:
		writeError(w, err)
	}
}
