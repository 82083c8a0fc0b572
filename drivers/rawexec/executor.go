package rawexec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/drover-project/drover/drivers/logrotate"
	"github.com/drover-project/drover/helper/pathguard"
)

// ExecutorArg is os.Args[1] of an executor process.
const ExecutorArg = "__drover_executor"

// The executor's files, in the task's private dir (TaskConfig.PrivateDir),
// which the task cannot see or write.
const (
	// exitFileName is written by the executor when the task exits.
	exitFileName = "exit.json"
	// specFileName holds the executor's spec until the executor has read it.
	specFileName = "executor.json"
)

// legacyExitFileName is where executors of older clients wrote the exit
// record: in the task dir. A handle without State.ExitFile is one of
// theirs, and its exit is read there.
const legacyExitFileName = ".drover-exit.json"

// statusFD is the executor's end of the start handshake pipe.
const statusFD = 3

// logDrainTimeout bounds how long the executor, once the task's process
// group is gone, waits for the task's output pipes to drain: a process the
// task started in another session may hold them open. A variable for
// tests.
var logDrainTimeout = 5 * time.Second

// execSpec is what the driver tells the executor to run.
type execSpec struct {
	Path       string   // resolved command path
	Args       []string // argv, argv[0] included
	Env        []string
	Dir        string
	StdoutPath string // first log file (<prefix>.0); "" discards
	StderrPath string
	// LogLimits bound the log files of each stream.
	LogLimits logrotate.Limits `json:",omitempty"`
	// LogRoot is the directory StdoutPath and StderrPath must stay in
	// after symlinks (the allocation's shared dir, which its tasks can
	// write but not replace); "" means each file's own directory.
	LogRoot  string `json:",omitempty"`
	ExitFile string
	UID, GID *uint32  `json:",omitempty"`
	Groups   []uint32 `json:",omitempty"`
	// Wrapper names a Wrapper (RegisterWrapper) that isolates the task;
	// WrapperSpec is its opaque spec. Empty for raw_exec tasks.
	Wrapper     string          `json:",omitempty"`
	WrapperSpec json.RawMessage `json:",omitempty"`
	// NetNS is the allocation's network namespace (bridge mode), which
	// the executor enters before it starts the task; "" keeps the host's.
	NetNS string `json:",omitempty"`
}

// startMsg is the executor's answer on the handshake pipe.
type startMsg struct {
	TaskPID       int    `json:",omitempty"`
	TaskStartTime uint64 `json:",omitempty"`
	Error         string `json:",omitempty"`
}

// exitRecord is the content of the exit file.
type exitRecord struct {
	ExitCode          int
	Signal            int
	OOMKilled         bool   `json:",omitempty"`
	Error             string `json:",omitempty"`
	TaskPID           int
	ExecutorPID       int
	ExecutorStartTime uint64
	CompletedAt       time.Time
}

// MaybeRunExecutor runs the raw_exec executor and exits if this process was
// started as one (os.Args[1] == ExecutorArg); otherwise it returns at once.
// Call it first thing in main, and in TestMain of tests that start raw_exec
// tasks, since the executor is a re-exec of the current binary.
//
// It also runs the helpers other drivers register with RegisterHelper (the
// exec driver's namespace init), which are re-executions of the same kind.
func MaybeRunExecutor() {
	if len(os.Args) < 2 {
		return
	}
	if os.Args[1] == ExecutorArg {
		os.Exit(runExecutor(os.Args[2:]))
	}
	if h := helper(os.Args[1]); h != nil {
		os.Exit(h(os.Args[2:]))
	}
}

// runExecutor starts the task described by the spec file args[0] in its own
// process group, reports its PID on fd 3, waits for it, records its exit in
// the exit file and returns the executor's exit code.
func runExecutor(args []string) int {
	// fd 3 must not leak into the task, or the driver would not see EOF.
	syscall.CloseOnExec(statusFD)
	status := os.NewFile(statusFD, "status")
	report := func(m startMsg) {
		if status != nil {
			_ = json.NewEncoder(status).Encode(m)
			_ = status.Close()
		}
	}
	if len(args) != 1 {
		report(startMsg{Error: "executor: want 1 argument (spec file)"})
		return 2
	}
	spec, err := readSpec(args[0])
	if err != nil {
		report(startMsg{Error: "executor: " + err.Error()})
		return 2
	}

	if err := enterNetns(spec.NetNS); err != nil {
		report(startMsg{Error: "executor: " + err.Error()})
		return 2
	}

	// Catch (rather than ignore) signals: ignored dispositions would be
	// inherited by the task. Caught ones are forwarded to the task's group.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE)

	cmd, output, err := taskCommand(spec)
	var wrapped *Wrapped
	if err == nil && spec.Wrapper != "" {
		wrapped, err = wrapCommand(cmd, spec)
	}
	if err == nil {
		err = cmd.Start()
		if err == nil && wrapped != nil && wrapped.Started != nil {
			if err = wrapped.Started(); err != nil {
				killGroup(cmd.Process.Pid)
				_ = cmd.Wait()
			}
		}
	}
	output.started()
	if err != nil {
		output.close(0)
		if wrapped != nil && wrapped.Cleanup != nil {
			wrapped.Cleanup()
		}
		report(startMsg{Error: err.Error()})
		return 1
	}
	pid := cmd.Process.Pid
	report(startMsg{TaskPID: pid, TaskStartTime: procStartTime(pid)})

	stop := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				if s != syscall.SIGPIPE {
					_ = syscall.Kill(-pid, s.(syscall.Signal))
				}
			case <-stop:
				return
			}
		}
	}()

	waitErr := cmd.Wait()
	close(stop)
	// The leader is gone: kill what is left of its process group.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	output.close(logDrainTimeout)

	rec := exitRecord{
		TaskPID:           pid,
		ExecutorPID:       os.Getpid(),
		ExecutorStartTime: procStartTime(os.Getpid()),
		CompletedAt:       time.Now().UTC(),
	}
	rec.ExitCode, rec.Signal = waitStatus(cmd.ProcessState)
	if wrapped != nil {
		if wrapped.Exit != nil {
			rec.ExitCode, rec.Signal, rec.OOMKilled = wrapped.Exit(cmd.ProcessState)
		}
		if wrapped.Cleanup != nil {
			wrapped.Cleanup()
		}
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		rec.Error = waitErr.Error()
	}
	if err := writeFileAtomic(spec.ExitFile, rec); err != nil {
		return 3
	}
	return 0
}

func readSpec(path string) (*execSpec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	_ = os.Remove(path) // it holds the task's environment
	var spec execSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return nil, fmt.Errorf("decoding spec: %w", err)
	}
	if spec.Path == "" || len(spec.Args) == 0 || spec.ExitFile == "" {
		return nil, errors.New("incomplete spec")
	}
	return &spec, nil
}

// taskCommand builds the task's command, its stdout and stderr the write
// ends of pipes that output copies to the task's log files.
func taskCommand(spec *execSpec) (*exec.Cmd, *taskOutput, error) {
	out := &taskOutput{}
	stdout, err := out.add(spec.LogRoot, spec.StdoutPath, spec.LogLimits)
	if err != nil {
		out.close(0)
		return nil, nil, fmt.Errorf("opening stdout: %w", err)
	}
	stderr, err := out.add(spec.LogRoot, spec.StderrPath, spec.LogLimits)
	if err != nil {
		out.close(0)
		return nil, nil, fmt.Errorf("opening stderr: %w", err)
	}
	cmd := &exec.Cmd{
		Path:        spec.Path,
		Args:        spec.Args,
		Env:         spec.Env,
		Dir:         spec.Dir,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	// Only assign non-nil files: a typed nil in an io.Writer is not nil.
	if stdout != nil {
		cmd.Stdout = stdout
	}
	if stderr != nil {
		cmd.Stderr = stderr
	}
	if spec.UID != nil && spec.GID != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: *spec.UID, Gid: *spec.GID, Groups: spec.Groups}
	}
	return cmd, out, nil
}

// taskOutput copies the task's output streams from pipes to their rotated
// log files.
type taskOutput struct {
	copies   []*logCopy
	copying  int
	done     chan struct{} // gets a value as each copy ends
	startedC bool
}

// logCopy is one stream: the pipe's ends and the log writer.
type logCopy struct {
	r, w *os.File // w is the task's end, closed in the executor once it started
	log  *logrotate.Writer
}

// add opens the log files of one stream (inside root, see
// execSpec.LogRoot) and returns the pipe end the task writes to; nil
// (os/exec connects /dev/null) when path is empty.
func (o *taskOutput) add(root, path string, lim logrotate.Limits) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	// The logs dir is shared with the allocation's tasks: a symlink
	// planted there must not make the executor (root) append the task's
	// output to a host file.
	log, err := logrotate.OpenIn(root, path, lim)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		log.Close()
		return nil, err
	}
	o.copies = append(o.copies, &logCopy{r: r, w: w, log: log})
	return w, nil
}

// started closes the executor's copies of the task's pipe ends (so a copy
// ends when the task's side is closed) and starts copying.
func (o *taskOutput) started() {
	if o == nil || o.startedC {
		return
	}
	o.startedC = true
	o.done = make(chan struct{}, len(o.copies))
	for _, c := range o.copies {
		_ = c.w.Close()
		o.copying++
		go func() {
			c.copy()
			o.done <- struct{}{}
		}()
	}
}

// close waits up to drain for the copies to reach the end of their pipes,
// then closes the log files.
func (o *taskOutput) close(drain time.Duration) {
	if o == nil {
		return
	}
	if !o.startedC {
		for _, c := range o.copies {
			_ = c.w.Close()
			_ = c.r.Close()
			_ = c.log.Close()
		}
		return
	}
	timeout := time.NewTimer(drain)
	defer timeout.Stop()
	for ; o.copying > 0; o.copying-- {
		select {
		case <-o.done:
		case <-timeout.C:
			o.copying = 0
		}
	}
	for _, c := range o.copies {
		_ = c.r.Close() // ends a copy still blocked in a read
		_ = c.log.Close()
	}
}

// copy copies the pipe to the log until the pipe's write ends are all
// closed. A failed write (a full disk) loses that chunk but keeps reading,
// so the task never blocks on its output.
func (c *logCopy) copy() {
	buf := make([]byte, 32<<10)
	for {
		n, err := c.r.Read(buf)
		if n > 0 {
			_, _ = c.log.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// waitStatus returns the exit code and the signal that ended a process; a
// process killed by a signal gets exit code 128+signal, like a shell.
func waitStatus(ps *os.ProcessState) (code, sig int) {
	if ps == nil {
		return -1, 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), int(ws.Signal())
	}
	return ps.ExitCode(), 0
}

// writeFileAtomic writes v as JSON to path through a temporary file and a
// rename, so readers see either nothing or the whole record.
func writeFileAtomic(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// readExitFile reads an exit record; ok is false if there is none.
func readExitFile(path string) (rec exitRecord, ok bool, err error) {
	b, err := readNoFollow(path)
	if errors.Is(err, os.ErrNotExist) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, false, fmt.Errorf("decoding %s: %w", path, err)
	}
	return rec, true, nil
}

// readNoFollow reads the file at path, refusing a symlink there: the
// driver's files are its own, and a task that replaced one with a symlink
// (in the task dir of an older client's handle) gets no read of the file
// it points to.
func readNoFollow(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// writeNew writes data to a new file at path, whose directory must stay
// inside root after symlinks: whatever is at path (a file, or a symlink a
// task planted) is removed first, and the file is created exclusively, so
// a symlink there is replaced, never followed.
func writeNew(root, path string, data []byte, perm os.FileMode) error {
	dir, err := pathguard.Within(root, filepath.Dir(path))
	if err != nil {
		return err
	}
	resolved := filepath.Join(dir, filepath.Base(path))
	if err := os.Remove(resolved); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(resolved, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
