package allocrunner

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"github.com/drover-project/drover/client/allocrunner/taskrunner"
)

// taskAPISocket is the task API socket's name in a task's secrets dir.
const taskAPISocket = "api.sock"

// maxSocketPath is the longest path by which a unix socket can be
// connected to on Linux (sun_path holds 108 bytes with the NUL).
const maxSocketPath = 107

// taskAPIAddr is a task's NOMAD_UNIX_ADDR when the runner serves a task
// API, else "".
func taskAPIAddr(listen func(string, string) (io.Closer, error), secretsDir string) string {
	if listen == nil {
		return ""
	}
	return "unix://" + filepath.Join(secretsDir, taskAPISocket)
}

// taskAPIHook opens each task's task API socket before the tasks start
// (again after a client restart: the sockets die with the client
// process), closes a task's once the task is dead, and every one when the
// allocation is done, destroyed or the client shuts down.
type taskAPIHook struct {
	ar     *AllocRunner
	listen func(taskDir, secretsDir string) (io.Closer, error)

	mu      sync.Mutex
	open    map[string]io.Closer // by task name
	closed  bool                 // closeAll ran: nothing opens any more
	closing sync.WaitGroup       // sockets of dead tasks being closed
}

var (
	_ Prerunner        = (*taskAPIHook)(nil)
	_ TaskStateWatcher = (*taskAPIHook)(nil)
	_ Postrunner       = (*taskAPIHook)(nil)
	_ Destroyer        = (*taskAPIHook)(nil)
)

func newTaskAPIHook(ar *AllocRunner, listen func(string, string) (io.Closer, error)) *taskAPIHook {
	return &taskAPIHook{ar: ar, listen: listen, open: map[string]io.Closer{}}
}

func (*taskAPIHook) Name() string { return "task_api" }

// Prerun opens the socket of every task that is not dead yet. A socket
// that cannot be opened fails the allocation: its tasks were promised
// NOMAD_UNIX_ADDR.
func (h *taskAPIHook) Prerun(context.Context, *PrerunRequest) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	for _, tr := range h.ar.tasks {
		name := tr.Name()
		if h.open[name] != nil || tr.State().State == taskrunner.StateDead {
			continue
		}
		td := h.ar.allocDir.TaskDir(name)
		l, err := h.listen(td.Dir, td.SecretsDir)
		if err != nil {
			return fmt.Errorf("task %q: %w", name, err)
		}
		h.open[name] = l
		if p := filepath.Join(td.SecretsDir, taskAPISocket); len(p) > maxSocketPath {
			h.ar.logger.Warn("the task API socket's path is too long for a client to connect by it; use a shorter data_dir",
				"task", name, "path", p, "max_bytes", maxSocketPath)
		}
	}
	return nil
}

// TaskStateChanged closes the sockets of dead tasks, in the background:
// it must not block (closing waits for the socket's server to stop).
func (h *taskAPIHook) TaskStateChanged() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, tr := range h.ar.tasks {
		name := tr.Name()
		if l := h.open[name]; l != nil && tr.State().State == taskrunner.StateDead {
			delete(h.open, name)
			h.closing.Add(1)
			go func() {
				defer h.closing.Done()
				h.closeOne(name, l)
			}()
		}
	}
}

// Postrun closes every socket: every task is dead.
func (h *taskAPIHook) Postrun() error { h.closeAll(); return nil }

// Destroy closes every socket.
func (h *taskAPIHook) Destroy() error { h.closeAll(); return nil }

// closeAll closes every socket, and waits for those being closed; nothing
// opens after it. Safe on nil.
func (h *taskAPIHook) closeAll() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.closed = true
	open := h.open
	h.open = map[string]io.Closer{}
	h.mu.Unlock()
	for name, l := range open {
		h.closeOne(name, l)
	}
	h.closing.Wait()
}

func (h *taskAPIHook) closeOne(name string, l io.Closer) {
	if err := l.Close(); err != nil {
		h.ar.logger.Warn("closing the task API socket", "task", name, "error", err)
	}
}
