package rawexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/drover-project/drover/drivers"
)

var _ drivers.Execer = (*Driver)(nil)

// execOutputGrace is how long output is still copied after an exec'd
// command exited, when a process it left behind holds its output open.
var execOutputGrace = time.Second

// ExecTask runs a command next to a running task: in its task dir, with its
// environment and user, in a session of its own (killed as a group when ctx
// ends). With opts.Tty it runs on a new pseudo-terminal.
func (d *Driver) ExecTask(ctx context.Context, taskID string, opts *drivers.ExecOptions) (*drivers.ExitResult, error) {
	if opts == nil || len(opts.Command) == 0 || opts.Command[0] == "" {
		return nil, errors.New("raw_exec: exec needs a command")
	}
	t, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	if t.exited() {
		return nil, fmt.Errorf("raw_exec: task %s has exited", taskID)
	}
	path, err := resolveCommand(opts.Command[0], t.cfg.TaskDir, t.cfg.Env)
	if err != nil {
		return nil, fmt.Errorf("raw_exec: %w", err)
	}
	uid, gid, groups, err := lookupUser(t.cfg.User)
	if err != nil {
		return nil, fmt.Errorf("raw_exec: %w", err)
	}
	cmd := exec.Command(path, opts.Command[1:]...)
	cmd.Args[0] = opts.Command[0]
	cmd.Dir = t.cfg.TaskDir
	cmd.Env = envList(t.cfg.Env)
	attr := &syscall.SysProcAttr{Setsid: true}
	if uid != nil {
		attr.Credential = &syscall.Credential{Uid: *uid, Gid: *gid, Groups: groups}
	}
	if opts.Tty {
		return execTTY(ctx, cmd, attr, opts)
	}
	return execPiped(ctx, cmd, attr, opts)
}

// execPiped runs cmd with its stdin, stdout and stderr as pipes.
func execPiped(ctx context.Context, cmd *exec.Cmd, attr *syscall.SysProcAttr, opts *drivers.ExecOptions) (*drivers.ExitResult, error) {
	cmd.SysProcAttr = attr
	cmd.Stdout, cmd.Stderr = opts.Stdout, opts.Stderr
	cmd.WaitDelay = execOutputGrace
	var stdin io.WriteCloser
	if opts.Stdin != nil {
		var err error
		if stdin, err = cmd.StdinPipe(); err != nil {
			return nil, fmt.Errorf("raw_exec: %w", err)
		}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("raw_exec: starting %q: %w", cmd.Args[0], err)
	}
	if stdin != nil {
		go func() {
			_, _ = io.Copy(stdin, opts.Stdin) // the command may exit without reading it all
			stdin.Close()
		}()
	}
	stop := killGroupOnCancel(ctx, cmd.Process.Pid)
	err := cmd.Wait()
	stop()
	return execResult(cmd, err)
}

// execTTY runs cmd on a new pseudo-terminal whose size follows opts.Resize.
func execTTY(ctx context.Context, cmd *exec.Cmd, attr *syscall.SysProcAttr, opts *drivers.ExecOptions) (*drivers.ExitResult, error) {
	attr.Setctty = true
	ptmx, err := pty.StartWithAttrs(cmd, nil, attr)
	if err != nil {
		return nil, fmt.Errorf("raw_exec: starting %q on a terminal: %w", cmd.Args[0], err)
	}
	defer ptmx.Close()
	// The resize goroutine is gone before the terminal closes (deferred
	// calls run last first).
	done := make(chan struct{})
	resized := make(chan struct{})
	defer func() {
		close(done)
		<-resized
	}()
	go func() {
		defer close(resized)
		for {
			select {
			case <-done:
				return
			case sz, ok := <-opts.Resize:
				if !ok {
					return
				}
				_ = pty.Setsize(ptmx, &pty.Winsize{Rows: uint16(sz.Height), Cols: uint16(sz.Width)})
			}
		}
	}()
	if opts.Stdin != nil {
		go func() {
			if _, err := io.Copy(ptmx, opts.Stdin); err == nil {
				_, _ = ptmx.Write([]byte{4}) // end of input: ^D, as a terminal sends it
			}
		}()
	}
	copied := make(chan struct{})
	go func() {
		out := opts.Stdout
		if out == nil {
			out = io.Discard
		}
		_, _ = io.Copy(out, ptmx) // ends with EIO once no process holds the terminal
		close(copied)
	}()
	stop := killGroupOnCancel(ctx, cmd.Process.Pid)
	err = cmd.Wait()
	stop()
	select {
	case <-copied:
	case <-time.After(execOutputGrace):
		ptmx.Close() // a process left behind holds the terminal
		<-copied
	}
	return execResult(cmd, err)
}

// killGroupOnCancel SIGKILLs the process group pgid when ctx ends before
// the returned stop is called.
func killGroupOnCancel(ctx context.Context, pgid int) (stop func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		case <-done:
		}
	}()
	return func() { close(done) }
}

// execResult turns the end of an exec'd command into its result: its exit
// code, or 128+n when signal n ended it.
func execResult(cmd *exec.Cmd, waitErr error) (*drivers.ExitResult, error) {
	st := cmd.ProcessState
	if st == nil {
		return nil, fmt.Errorf("raw_exec: %q: %w", cmd.Args[0], waitErr)
	}
	r := &drivers.ExitResult{ExitCode: st.ExitCode()}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		r.Signal = int(ws.Signal())
		r.ExitCode = 128 + r.Signal
	}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) && !errors.Is(waitErr, exec.ErrWaitDelay) && !errors.Is(waitErr, os.ErrClosed) {
		r.Err = waitErr
	}
	return r, nil
}
