package command

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hashicorp/nomad/api"
)

const allocExecHelp = `Usage: drover alloc exec [options] <allocation> <command> [<args>...]
       drover alloc exec -job [options] <job> <command> [<args>...]

  Run a command in a running allocation's task: with raw_exec in the
  task's directory and environment on the host, with docker inside the
  task's container. The command's exit code is this command's exit code.

Exec Options:

  -job
    Take the first argument as a job ID or prefix, and run the command in
    one of its running allocations, chosen at random.

  -task <task-name>
    The task to run the command in. May be omitted when the allocation's
    group has a single task.

  -i
    Pass stdin to the command (default true). With -i=false the command's
    stdin is empty.

  -t
    Run the command on a pseudo-terminal (default true when stdin is a
    terminal). The local terminal is put in raw mode meanwhile and its size
    follows the local one.`

// allocExec implements `drover alloc exec`.
func allocExec(m *Meta, args []string) int {
	var task string
	var stdinOn, byJob bool
	stdinFile, _ := m.Stdin.(*os.File)
	stdinTTY := stdinFile != nil && isTerminalFD(int(stdinFile.Fd()))
	tty := stdinTTY
	fs := m.FlagSet("alloc exec")
	fs.StringVar(&task, "task", "", "")
	fs.BoolVar(&byJob, "job", false, "")
	fs.BoolVar(&stdinOn, "i", true, "")
	fs.BoolVar(&tty, "t", stdinTTY, "")
	if code, ok := m.parse(fs, args, allocExecHelp); !ok {
		return code
	}
	if fs.NArg() < 2 {
		return m.usageError("This command takes at least two arguments: <allocation> <command>", allocExecHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	var alloc *api.Allocation
	var code int
	if byJob {
		alloc, code = randomRunningAlloc(m, c, fs.Arg(0))
	} else {
		alloc, code = lookupAlloc(m, c, fs.Arg(0), false)
	}
	if alloc == nil {
		return code
	}
	task, err := logTask(alloc, task)
	if err != nil {
		m.errorf("%s", err)
		return 1
	}
	var stdin io.Reader = strings.NewReader("")
	if stdinOn {
		stdin = m.Stdin
	}
	sizes := make(chan api.TerminalSize, 1)
	if tty && stdinTTY {
		fd := int(stdinFile.Fd())
		restore, err := makeRaw(fd)
		if err != nil {
			m.errorf("Error setting the terminal to raw mode: %s", err)
			return 1
		}
		defer restore()
		stop := followTerminalSize(fd, sizes)
		defer stop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exitCode, err := c.Allocations().Exec(ctx, alloc, task, tty, fs.Args()[1:], stdin, m.Stdout, m.Stderr, sizes,
		&api.QueryOptions{Namespace: alloc.Namespace})
	if err != nil {
		m.errorf("failed to exec into task: %s", err)
		return 1
	}
	return exitCode
}

// randomRunningAlloc picks one running allocation of the job named by ID
// or prefix. A nil allocation means the command must exit with code.
func randomRunningAlloc(m *Meta, c *api.Client, jobPrefix string) (*api.Allocation, int) {
	job, code := lookupJob(m, c, jobPrefix)
	if job == nil {
		return nil, code
	}
	q := &api.QueryOptions{Namespace: job.Namespace}
	stubs, _, err := c.Jobs().Allocations(job.ID, false, q)
	if err != nil {
		m.errorf("Error querying job allocations: %s", err)
		return nil, 1
	}
	var running []*api.AllocationListStub
	for _, s := range stubs {
		if s.ClientStatus == api.AllocClientStatusRunning {
			running = append(running, s)
		}
	}
	if len(running) == 0 {
		m.errorf("No running allocations found for job %q", job.ID)
		return nil, 1
	}
	pick := running[rand.IntN(len(running))]
	alloc, _, err := c.Allocations().Info(pick.ID, q)
	if err != nil {
		m.errorf("Error querying allocation: %s", err)
		return nil, 1
	}
	return alloc, 0
}

// followTerminalSize sends the size of terminal fd now and on every
// SIGWINCH until stop is called.
func followTerminalSize(fd int, sizes chan<- api.TerminalSize) (stop func()) {
	send := func() {
		if h, w, err := terminalSize(fd); err == nil {
			select {
			case sizes <- api.TerminalSize{Height: h, Width: w}:
			default: // the previous size is not sent yet; the next change follows
			}
		}
	}
	send()
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-winch:
				send()
			}
		}
	}()
	return func() {
		signal.Stop(winch)
		close(done)
	}
}
