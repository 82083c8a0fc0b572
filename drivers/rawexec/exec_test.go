package rawexec

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// sleeper starts a long-running task to exec into.
func sleeper(t *testing.T) (*Driver, *drivers.TaskConfig) {
	t.Helper()
	d := newDriver(t)
	cfg := newTask(t, "/bin/sleep", "3600")
	cfg.Env["GREETING"] = "from the task env"
	start(t, d, cfg)
	return d, cfg
}

func execCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestExec_PipedOutputEnvDirAndExitCode(t *testing.T) {
	d, cfg := sleeper(t)
	var out, errOut syncBuffer
	res, err := d.ExecTask(execCtx(t), cfg.ID, &drivers.ExecOptions{
		Command: []string{"sh", "-c", "echo $GREETING; pwd; echo oops >&2; exit 7"},
		Stdin:   strings.NewReader(""), Stdout: &out, Stderr: &errOut,
	})
	require.NoError(t, err)
	require.Equal(t, 7, res.ExitCode)
	require.Zero(t, res.Signal)
	require.Equal(t, "from the task env\n"+cfg.TaskDir+"\n", out.String())
	require.Equal(t, "oops\n", errOut.String())
}

func TestExec_StdinReachesTheCommand(t *testing.T) {
	d, cfg := sleeper(t)
	var out syncBuffer
	res, err := d.ExecTask(execCtx(t), cfg.ID, &drivers.ExecOptions{
		Command: []string{"wc", "-l"}, Stdin: strings.NewReader("a\nb\nc\n"), Stdout: &out,
	})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	require.Equal(t, "3", strings.TrimSpace(out.String()))
}

func TestExec_SignalledCommand(t *testing.T) {
	d, cfg := sleeper(t)
	res, err := d.ExecTask(execCtx(t), cfg.ID, &drivers.ExecOptions{Command: []string{"sh", "-c", "kill -TERM $$"}})
	require.NoError(t, err)
	require.Equal(t, 15, res.Signal)
	require.Equal(t, 128+15, res.ExitCode)
}

func TestExec_TTYWithResize(t *testing.T) {
	d, cfg := sleeper(t)
	resize := make(chan drivers.TerminalSize, 1)
	resize <- drivers.TerminalSize{Height: 42, Width: 123}
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	var out syncBuffer
	done := make(chan struct{})
	var res *drivers.ExitResult
	var err error
	go func() {
		defer close(done)
		res, err = d.ExecTask(execCtx(t), cfg.ID, &drivers.ExecOptions{
			// reads one line, so the size is applied before stty reads it
			Command: []string{"sh", "-c", "read line; stty size; test -t 1 && echo tty $line"},
			Tty:     true, Stdin: stdinR, Stdout: &out, Resize: resize,
		})
	}()
	require.Eventually(t, func() bool { return len(resize) == 0 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(50 * time.Millisecond) // the resize goroutine applies the size it took
	_, _ = stdinW.Write([]byte("ok\n"))
	<-done
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	require.Contains(t, out.String(), "42 123\r\n")
	require.Contains(t, out.String(), "tty ok\r\n")
}

func TestExec_CancelKillsTheCommandGroup(t *testing.T) {
	d, cfg := sleeper(t)
	marker := filepath.Join(t.TempDir(), "marker")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	start := time.Now()
	res, err := d.ExecTask(ctx, cfg.ID, &drivers.ExecOptions{
		Command: []string{"sh", "-c", "(sleep 1; touch " + marker + ") & wait"},
	})
	require.NoError(t, err)
	require.Equal(t, 9, res.Signal)
	require.Less(t, time.Since(start), time.Second)
	time.Sleep(1500 * time.Millisecond)
	_, statErr := os.Stat(marker)
	require.True(t, errors.Is(statErr, os.ErrNotExist), "the command's children were killed too")
}

func TestExec_Errors(t *testing.T) {
	d, cfg := sleeper(t)
	_, err := d.ExecTask(execCtx(t), cfg.ID, &drivers.ExecOptions{Command: []string{"/no/such/program"}})
	require.ErrorContains(t, err, "/no/such/program")
	_, err = d.ExecTask(execCtx(t), cfg.ID, &drivers.ExecOptions{})
	require.ErrorContains(t, err, "exec needs a command")
	_, err = d.ExecTask(execCtx(t), "other/task", &drivers.ExecOptions{Command: []string{"true"}})
	require.ErrorIs(t, err, drivers.ErrTaskNotFound)
	require.NoError(t, d.StopTask(cfg.ID, time.Second, ""))
	_, err = d.ExecTask(execCtx(t), cfg.ID, &drivers.ExecOptions{Command: []string{"true"}})
	require.ErrorContains(t, err, "has exited")
}
