package docker

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
)

// TestExecTask: a command exec'd in a task runs inside its container. The
// fixture image holds only its web server, so the test runs a second copy
// of it: in the container's network the port is taken, and it exits 1 with
// the error on stderr (or on the terminal's output with Tty).
func TestExecTask(t *testing.T) {
	e := newEnv(t)
	ref, _ := e.push("exec", "v1", "1", 0)
	cfg, port := e.taskConfig(ref, nil)
	e.start(cfg)
	require.Equal(t, "version 1\n", get(t, port))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var out, errOut bytes.Buffer
	res, err := e.d.ExecTask(ctx, cfg.ID, &drivers.ExecOptions{Command: []string{"/server"}, Stdout: &out, Stderr: &errOut})
	require.NoError(t, err)
	require.Equal(t, 1, res.ExitCode)
	require.Contains(t, errOut.String(), "address already in use")
	require.Empty(t, out.String())

	out.Reset()
	res, err = e.d.ExecTask(ctx, cfg.ID, &drivers.ExecOptions{Command: []string{"/server"}, Tty: true, Stdout: &out})
	require.NoError(t, err)
	require.Equal(t, 1, res.ExitCode)
	require.Contains(t, out.String(), "address already in use\r\n", "one terminal stream, with its line endings")

	res, err = e.d.ExecTask(ctx, cfg.ID, &drivers.ExecOptions{Command: []string{"/no/such/program"}})
	require.NoError(t, err, "the engine reports a missing program as the exec's exit code")
	require.NotEqual(t, 0, res.ExitCode)

	_, err = e.d.ExecTask(ctx, "other/task", &drivers.ExecOptions{Command: []string{"/server"}})
	require.ErrorIs(t, err, drivers.ErrTaskNotFound)
	_, err = e.d.ExecTask(ctx, cfg.ID, &drivers.ExecOptions{})
	require.ErrorContains(t, err, "exec needs a command")
}
