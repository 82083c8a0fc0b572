package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/client/allocrunner"
	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/drivers"
)

// Exec sessions (GET /v1/client/allocation/{id}/exec, upgraded to a
// websocket). The query names the task, the command (a JSON array) and tty.
// The caller sends api.ExecStreamingInput frames (stdin data, stdin close,
// tty_size, or an empty heartbeat); the client answers with
// api.ExecStreamingOutput frames (stdout or stderr data, empty heartbeats)
// and, once the command has exited, one {"exited": true, "result":
// {"exit_code": N}} frame before a normal close. An error, found before or
// after the upgrade, ends the session with a close frame whose text is the
// error (the api client reports that text) and whose code is 4000 plus the
// HTTP status (1011 for an internal error); a request that is not a
// websocket upgrade gets the error as a plain HTTP answer.

// execHeartbeat is how often an idle session sends an empty frame.
var execHeartbeat = 10 * time.Second

// execWriteTimeout bounds one frame write to a caller that stopped reading.
const execWriteTimeout = 10 * time.Second

var execUpgrader = websocket.Upgrader{
	ReadBufferSize:  4096,
	WriteBufferSize: 4096,
	// The caller authenticates with its token, not a cookie, so a page on
	// another origin gains nothing it could not do by itself.
	CheckOrigin: func(*http.Request) bool { return true },
}

// execRequest is a checked exec query.
type execRequest struct {
	task    string
	command []string
	tty     bool
}

// ParseExecQuery reads and checks the exec query parameters; the error
// (a bad request) names the parameter and the rule.
func ParseExecQuery(r *http.Request) (task string, command []string, tty bool, err error) {
	q := r.URL.Query()
	task = q.Get("task")
	if task == "" {
		return "", nil, false, errors.New("task not present")
	}
	if v := q.Get("tty"); v != "" {
		if tty, err = strconv.ParseBool(v); err != nil {
			return "", nil, false, fmt.Errorf("tty must be a bool, got %q", v)
		}
	}
	raw := q.Get("command")
	if raw == "" {
		return "", nil, false, errors.New("command is not present")
	}
	if err := json.Unmarshal([]byte(raw), &command); err != nil {
		return "", nil, false, fmt.Errorf("command must be a JSON array of strings: %v", err)
	}
	if len(command) == 0 || command[0] == "" {
		return "", nil, false, errors.New("command is not present")
	}
	return task, command, tty, nil
}

// WriteExecError ends an exec request with err: as a websocket close frame
// (4000+code, or 1011 for a 500) when r asks for an upgrade, else as a
// plain HTTP answer. code is the HTTP status of err.
func WriteExecError(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if !websocket.IsWebSocketUpgrade(r) {
		http.Error(w, msg, code)
		return
	}
	conn, err := execUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	closeWith(conn, wsCode(code), msg)
}

func wsCode(httpCode int) int {
	if httpCode >= 500 {
		return websocket.CloseInternalServerErr
	}
	return 4000 + httpCode
}

// closeWith sends a close frame and closes the connection.
func closeWith(conn *websocket.Conn, code int, msg string) {
	if len(msg) > 120 { // a control frame's payload is at most 125 bytes
		msg = msg[:120]
	}
	_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, msg), time.Now().Add(time.Second))
	_ = conn.Close()
}

// execError answers err of an exec request (see WriteExecError).
func execError(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	var he *httpError
	if errors.As(err, &he) {
		code = he.Code
	}
	WriteExecError(w, r, code, err.Error())
}

// handleAllocExec serves an exec session; see the comment at the top.
// With ACLs on the token needs alloc-exec in the allocation's namespace,
// and also alloc-node-exec for a raw_exec task (it runs on the host).
func (c *Client) handleAllocExec(w http.ResponseWriter, r *http.Request) {
	ar, req, err := c.execTarget(r)
	if err != nil {
		execError(w, r, err)
		return
	}
	conn, err := execUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	s := &execSession{conn: conn}
	res, err := s.run(func(ctx context.Context, opts *drivers.ExecOptions) (*drivers.ExitResult, error) {
		opts.Command, opts.Tty = req.command, req.tty
		return ar.Exec(ctx, req.task, opts)
	})
	switch {
	case errors.Is(err, taskrunner.ErrTaskNotRunning):
		closeWith(conn, wsCode(http.StatusNotFound), fmt.Sprintf("task %q is not running.", req.task))
	case errors.Is(err, drivers.ErrExecNotSupported):
		closeWith(conn, wsCode(http.StatusBadRequest), err.Error())
	case err != nil:
		c.logger.Debug("exec failed", "alloc_id", ar.Alloc().ID, "task", req.task, "error", err)
		closeWith(conn, websocket.CloseInternalServerErr, err.Error())
	default:
		s.finish(res)
	}
}

// execTarget finds the allocation runner and the checked request of an
// exec query, with the ACL checks.
func (c *Client) execTarget(r *http.Request) (*allocrunner.AllocRunner, *execRequest, error) {
	id := r.PathValue("id")
	ar, err := c.allocRunner(r, id, acl.NamespaceCapabilityAllocExec)
	if err != nil {
		return nil, nil, err
	}
	task, command, tty, err := ParseExecQuery(r)
	if err != nil {
		return nil, nil, badRequest("%v", err)
	}
	alloc := ar.Alloc()
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil || tg.LookupTask(task) == nil {
		return nil, nil, badRequest("unknown task name %q", task)
	}
	if tg.LookupTask(task).Driver == "raw_exec" {
		if err := c.requireNamespace(r, alloc.Namespace, acl.NamespaceCapabilityAllocNodeExec); err != nil {
			return nil, nil, err
		}
	}
	return ar, &execRequest{task: task, command: command, tty: tty}, nil
}

// execSession moves frames between the websocket and one command.
type execSession struct {
	conn *websocket.Conn
	wmu  sync.Mutex // one writer at a time
}

func (s *execSession) send(out *api.ExecStreamingOutput) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(execWriteTimeout))
	return s.conn.WriteJSON(out)
}

// run starts exec with the session's stdin, stdout, stderr and resizes,
// and returns its result. A caller that goes away cancels the command.
func (s *execSession) run(exec func(context.Context, *drivers.ExecOptions) (*drivers.ExitResult, error)) (*drivers.ExitResult, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdinR, stdinW := io.Pipe()
	defer stdinR.Close()
	resize := make(chan drivers.TerminalSize, 8)
	go s.readInput(cancel, stdinW, resize)
	go s.heartbeat(ctx, cancel)
	return exec(ctx, &drivers.ExecOptions{
		Stdin:  stdinR,
		Stdout: &frameWriter{s: s},
		Stderr: &frameWriter{s: s, stderr: true},
		Resize: resize,
	})
}

// readInput applies the caller's frames until the connection ends, then
// cancels the session.
func (s *execSession) readInput(cancel context.CancelFunc, stdin *io.PipeWriter, resize chan<- drivers.TerminalSize) {
	defer cancel()
	defer stdin.Close()
	for {
		var in api.ExecStreamingInput
		if err := s.conn.ReadJSON(&in); err != nil {
			return
		}
		switch {
		case in.Stdin != nil:
			if len(in.Stdin.Data) > 0 {
				if _, err := stdin.Write(in.Stdin.Data); err != nil {
					continue // the command closed its input; keep reading frames
				}
			}
			if in.Stdin.Close {
				stdin.Close()
			}
		case in.TTYSize != nil:
			select {
			case resize <- drivers.TerminalSize{Height: in.TTYSize.Height, Width: in.TTYSize.Width}:
			default: // the command is behind; a later size follows
			}
		}
	}
}

// heartbeat sends an empty frame every execHeartbeat; one that cannot be
// sent means the caller is gone (noticed even while readInput waits for the
// command to take its input), and cancels the session.
func (s *execSession) heartbeat(ctx context.Context, cancel context.CancelFunc) {
	t := time.NewTicker(execHeartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if s.send(&api.ExecStreamingOutput{}) != nil {
				cancel()
				return
			}
		}
	}
}

// finish sends the exit frame and closes the session normally.
func (s *execSession) finish(res *drivers.ExitResult) {
	_ = s.send(&api.ExecStreamingOutput{Exited: true, Result: &api.ExecStreamingExitResult{ExitCode: res.ExitCode}})
	s.wmu.Lock()
	defer s.wmu.Unlock()
	closeWith(s.conn, websocket.CloseNormalClosure, "")
}

// frameWriter sends what the command writes as stdout or stderr frames.
type frameWriter struct {
	s      *execSession
	stderr bool
}

func (f *frameWriter) Write(p []byte) (int, error) {
	op := &api.ExecStreamingIOOperation{Data: p}
	out := &api.ExecStreamingOutput{Stdout: op}
	if f.stderr {
		out = &api.ExecStreamingOutput{Stderr: op}
	}
	if err := f.s.send(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
