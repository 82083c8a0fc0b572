package drivers

import (
	"context"
	"errors"
	"io"
)

// Execer is implemented by drivers that can run a command inside a running
// task (alloc exec): in the task's working directory, with its environment
// and, for an isolating driver, inside its isolation (the container).
type Execer interface {
	// ExecTask runs opts.Command in task taskID and returns how it ended.
	// It returns when the command has exited and its output is written, or
	// when ctx is cancelled (the command is then killed). The error is for
	// a command that could not be started (unknown program, task gone); a
	// command that ran and failed gives its exit code in the result.
	ExecTask(ctx context.Context, taskID string, opts *ExecOptions) (*ExitResult, error)
}

// ExecOptions is one command to run in a task.
type ExecOptions struct {
	// Command is the program and its arguments; at least one element.
	Command []string
	// Tty runs the command on a new pseudo-terminal: its output, stdout and
	// stderr together, goes to Stdout; Stderr is not used.
	Tty bool
	// Stdin is the command's input (nil: none). The driver reads it until
	// io.EOF, which closes the command's stdin.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output; writes come from one
	// goroutine per stream.
	Stdout, Stderr io.Writer
	// Resize delivers terminal size changes (Tty only; may be nil).
	Resize <-chan TerminalSize
}

// TerminalSize is the size of the caller's terminal in characters.
type TerminalSize struct {
	Height, Width int
}

// ErrExecNotSupported is the answer for a task whose driver cannot run a
// command inside it.
var ErrExecNotSupported = errors.New("driver does not support exec")
