package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/drover-project/drover/drivers"
)

var _ drivers.Execer = (*Driver)(nil)

// ExecTask runs a command in the task's container through the engine's exec
// API: created with the task's user, attached (stdin when opts.Stdin is
// set), on a terminal with opts.Tty (resized as opts.Resize says), and its
// exit code read from the exec's inspection once its output ends. A
// cancelled ctx closes the attachment; the engine offers no way to kill an
// exec, so the command may live on until it reads or writes.
func (d *Driver) ExecTask(ctx context.Context, taskID string, opts *drivers.ExecOptions) (*drivers.ExitResult, error) {
	if opts == nil || len(opts.Command) == 0 || opts.Command[0] == "" {
		return nil, errors.New("docker: exec needs a command")
	}
	t, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	if t.exited() {
		return nil, fmt.Errorf("docker: task %s has exited", taskID)
	}
	cli, err := d.client()
	if err != nil {
		return nil, err
	}
	created, err := cli.ContainerExecCreate(ctx, t.state.ContainerID, container.ExecOptions{
		User:         t.cfg.User,
		Tty:          opts.Tty,
		AttachStdin:  opts.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
		Cmd:          opts.Command,
	})
	if err != nil {
		return nil, fmt.Errorf("docker: creating exec in container %s: %w", t.state.ContainerID, err)
	}
	att, err := cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{Tty: opts.Tty})
	if err != nil {
		return nil, fmt.Errorf("docker: starting exec in container %s: %w", t.state.ContainerID, err)
	}
	defer att.Close()

	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			att.Close() // unblocks the copies below
		case <-done:
		}
	}()
	if opts.Tty && opts.Resize != nil {
		go func() {
			for {
				select {
				case <-done:
					return
				case sz, ok := <-opts.Resize:
					if !ok {
						return
					}
					_ = cli.ContainerExecResize(ctx, created.ID, container.ResizeOptions{Height: uint(sz.Height), Width: uint(sz.Width)})
				}
			}
		}()
	}
	if opts.Stdin != nil {
		go func() {
			_, _ = io.Copy(att.Conn, opts.Stdin)
			_ = att.CloseWrite() // end of input
		}()
	}
	stdout, stderr := orDiscard(opts.Stdout), orDiscard(opts.Stderr)
	if opts.Tty {
		_, err = io.Copy(stdout, att.Reader)
	} else {
		_, err = stdcopy.StdCopy(stdout, stderr, att.Reader)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("docker: reading exec output: %w", err)
	}
	return d.execExit(ctx, created.ID)
}

// execExit waits (briefly) for the engine to record the exec's exit code
// after its output ended.
func (d *Driver) execExit(ctx context.Context, execID string) (*drivers.ExitResult, error) {
	cli, err := d.client()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ins, err := cli.ContainerExecInspect(ctx, execID)
		if err != nil {
			return nil, fmt.Errorf("docker: inspecting exec: %w", err)
		}
		if !ins.Running {
			return &drivers.ExitResult{ExitCode: ins.ExitCode}, nil
		}
		if time.Now().After(deadline) {
			return nil, errors.New("docker: exec output ended but the command is still running")
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
