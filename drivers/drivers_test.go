package drivers

import (
	"encoding/json"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseSignal(t *testing.T) {
	for in, want := range map[string]syscall.Signal{
		"SIGINT": syscall.SIGINT, "sigint": syscall.SIGINT, "INT": syscall.SIGINT, " SIGTERM ": syscall.SIGTERM,
		"SIGKILL": syscall.SIGKILL, "SIGHUP": syscall.SIGHUP, "SIGUSR1": syscall.SIGUSR1, "9": syscall.SIGKILL,
	} {
		got, err := ParseSignal(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "SIGNOPE", "0", "65", "-1"} {
		_, err := ParseSignal(in)
		require.Error(t, err, in)
	}
	sig, err := ParseSignalDefault("")
	require.NoError(t, err)
	require.Equal(t, syscall.SIGTERM, sig)

	require.Equal(t, "SIGUSR1", SignalName(syscall.SIGUSR1))
	require.Equal(t, "SIGABRT", SignalName(syscall.SIGABRT))
	require.Equal(t, "40", SignalName(syscall.Signal(40)))
}

func TestExitResult(t *testing.T) {
	require.True(t, (&ExitResult{}).Successful())
	require.False(t, (&ExitResult{ExitCode: 1}).Successful())
	require.False(t, (&ExitResult{Signal: 15}).Successful())
	require.False(t, (&ExitResult{OOMKilled: true}).Successful())
	require.False(t, (&ExitResult{Err: errors.New("x")}).Successful())
	require.False(t, (*ExitResult)(nil).Successful())
	require.Equal(t, "exit code 143, signal 15", (&ExitResult{ExitCode: 143, Signal: 15}).String())
}

func TestConfigHelpers(t *testing.T) {
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{"s":"x","n":3,"f":1.5,"b":true,"d":"150ms","dn":1000,"l":["a","b"],"bad":[1]}`), &m))

	s, ok, err := ConfigString(m, "s")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "x", s)
	_, ok, err = ConfigString(m, "absent")
	require.NoError(t, err)
	require.False(t, ok)
	_, _, err = ConfigString(m, "n")
	require.EqualError(t, err, "n must be a string, got float64")

	n, _, err := ConfigInt(m, "n")
	require.NoError(t, err)
	require.Equal(t, 3, n)
	_, _, err = ConfigInt(m, "f")
	require.ErrorContains(t, err, "f must be an integer")
	n, _, err = ConfigInt(map[string]any{"n": int64(7)}, "n")
	require.NoError(t, err)
	require.Equal(t, 7, n)

	b, _, err := ConfigBool(m, "b")
	require.NoError(t, err)
	require.True(t, b)
	b, _, err = ConfigBool(map[string]any{"b": "false"}, "b")
	require.NoError(t, err)
	require.False(t, b)

	d, _, err := ConfigDuration(m, "d")
	require.NoError(t, err)
	require.Equal(t, 150*time.Millisecond, d)
	d, _, err = ConfigDuration(m, "dn")
	require.NoError(t, err)
	require.Equal(t, time.Microsecond, d)

	l, _, err := ConfigStringSlice(m, "l")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, l)
	_, _, err = ConfigStringSlice(m, "bad")
	require.EqualError(t, err, "bad[0] must be a string, got float64")
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "bad[0]", fe.Field)

	err = CheckFields(map[string]any{"a": 1, "zz": 2, "yy": 3}, "a")
	require.EqualError(t, err, "yy is not a known option (known: a)\nzz is not a known option (known: a)")
	require.NoError(t, CheckFields(nil, "a"))
}

func TestRecoverableError(t *testing.T) {
	base := errors.New("pull failed")
	err := NewRecoverableError(base, true)
	require.True(t, IsRecoverable(err))
	require.ErrorIs(t, err, base)
	require.False(t, IsRecoverable(NewRecoverableError(base, false)))
	require.False(t, IsRecoverable(base))
	require.NoError(t, NewRecoverableError(nil, true))
}

func TestTaskConfigCopy(t *testing.T) {
	c := &TaskConfig{ID: "a/b", Config: map[string]any{"k": "v"}, Env: map[string]string{"A": "1"}}
	n := c.Copy()
	n.Config["k"] = "w"
	n.Env["A"] = "2"
	require.Equal(t, "v", c.Config["k"])
	require.Equal(t, "1", c.Env["A"])
	require.Nil(t, (*TaskConfig)(nil).Copy())
}

func TestPrepareProgressPercent(t *testing.T) {
	require.Equal(t, 50.0, PrepareProgress{BytesDone: 5, BytesTotal: 10}.Percent())
	require.Equal(t, 0.0, PrepareProgress{BytesDone: 5}.Percent())
}
