package command

import (
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/hashicorp/nomad/api"
)

const allocLogsHelp = `Usage: drover alloc logs [options] <allocation> <task>

  Stream the stdout or stderr of a task of an allocation. The task may be
  omitted when the allocation's group has a single task.

Logs Options:

  -stderr
    Display stderr logs.

  -f
    Follow the logs: keep streaming new output until interrupted.

  -tail
    Show the logs contents with offsets relative to the end of the logs.

  -c
    Sets the tail location in number of bytes relative to the end of the logs.

  -verbose
    Show full information.`

// allocLogs implements `drover alloc logs`.
func allocLogs(m *Meta, args []string) int {
	var stderr, follow, tail, verbose bool
	var numBytes int64
	fs := m.FlagSet("alloc logs")
	fs.BoolVar(&stderr, "stderr", false, "")
	fs.BoolVar(&follow, "f", false, "")
	fs.BoolVar(&tail, "tail", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	fs.Int64Var(&numBytes, "c", 0, "")
	if code, ok := m.parse(fs, args, allocLogsHelp); !ok {
		return code
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return m.usageError("This command takes one or two arguments: <allocation> <task>", allocLogsHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	alloc, code := lookupAlloc(m, c, fs.Arg(0), verbose)
	if alloc == nil {
		return code
	}
	task, err := logTask(alloc, fs.Arg(1))
	if err != nil {
		m.errorf("%s", err)
		return 1
	}
	logType, origin, offset := "stdout", "start", int64(0)
	if stderr {
		logType = "stderr"
	}
	if tail || numBytes > 0 {
		origin, offset = "end", max(numBytes, 0)
	}
	cancel := make(chan struct{})
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
			close(cancel)
		case <-cancel:
		}
	}()
	frames, errs := c.AllocFS().Logs(alloc, follow, task, logType, origin, offset, cancel, nil)
	return copyFrames(m.Stdout, frames, errs, m)
}

// copyFrames writes the streamed frames to w until the stream ends.
func copyFrames(w io.Writer, frames <-chan *api.StreamFrame, errs <-chan error, m *Meta) int {
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				return 0
			}
			if _, err := w.Write(f.Data); err != nil {
				return 1
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			m.errorf("Error reading logs: %s", err)
			return 1
		}
	}
}

// logTask returns the task to show: the named one, or the group's only task.
func logTask(alloc *api.Allocation, name string) (string, error) {
	var tasks []string
	if alloc.Job != nil {
		for _, tg := range alloc.Job.TaskGroups {
			if tg.Name != nil && *tg.Name == alloc.TaskGroup {
				for _, t := range tg.Tasks {
					tasks = append(tasks, t.Name)
				}
			}
		}
	}
	if name != "" {
		for _, t := range tasks {
			if t == name {
				return name, nil
			}
		}
		return "", fmt.Errorf("Could not find task named: %s", name)
	}
	if len(tasks) != 1 {
		return "", fmt.Errorf("Allocation %q is running the following tasks:\n  * %v\n\nPlease specify the task.", alloc.ID, tasks)
	}
	return tasks[0], nil
}
