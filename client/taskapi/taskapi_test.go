package taskapi

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAuthenticate(t *testing.T) {
	known := func(tok string) bool { return tok == "wi.of.ours" }
	cases := []struct {
		name  string
		token string
		acl   bool
		want  error
	}{
		{"no token, ACLs on", "", true, ErrNoCredentials},
		{"no token, ACLs off: still refused", "", false, ErrNoCredentials},
		{"any token, ACLs on: the API resolves it", "some-secret", true, nil},
		{"our identity, ACLs off", "wi.of.ours", false, nil},
		{"another token, ACLs off", "wi.of.theirs", false, ErrUnknownIdentity},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Authenticate(tc.token, tc.acl, known))
		})
	}
}

func TestRequestToken(t *testing.T) {
	r, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
	require.Equal(t, "", RequestToken(r))
	r.Header.Set("Authorization", "Bearer a.b.c")
	require.Equal(t, "a.b.c", RequestToken(r))
	r.Header.Set("X-Nomad-Token", "secret")
	require.Equal(t, "secret", RequestToken(r), "X-Nomad-Token first")
}

// socketClient is an HTTP client dialling the unix socket at path.
func socketClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
}

func get(t *testing.T, c *http.Client, header, value string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://task-api/v1/job/web", nil)
	require.NoError(t, err)
	if header != "" {
		req.Header.Set(header, value)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestListenServesAndCloses: the socket, bound in a deep task dir (past
// the 108-byte limit of socket paths), refuses requests without
// credentials, hands the others to the agent's API with the credential as
// X-Nomad-Token, and is removed on Close.
func TestListenServesAndCloses(t *testing.T) {
	taskDir := filepath.Join(t.TempDir(), strings.Repeat("deep/", 20), "alloc-0123456789abcdef", "web")
	secrets := filepath.Join(taskDir, "secrets")
	require.NoError(t, os.MkdirAll(secrets, 0o755))
	require.Greater(t, len(filepath.Join(secrets, SocketName)), 108)

	s := New(Config{ACLEnabled: true})
	l, err := s.Listen(taskDir, secrets)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	fi, err := os.Lstat(filepath.Join(secrets, SocketName))
	require.NoError(t, err)
	require.Equal(t, os.ModeSocket, fi.Mode().Type())
	require.Equal(t, os.FileMode(socketMode), fi.Mode().Perm())

	// A short path to the same socket for the client's dial.
	link := filepath.Join(t.TempDir(), "s")
	require.NoError(t, os.Symlink(secrets, link))
	c := socketClient(filepath.Join(link, SocketName))

	code, _ := get(t, c, "X-Nomad-Token", "a.b.c")
	require.Equal(t, http.StatusServiceUnavailable, code, "no API yet")
	var seen string
	s.SetHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Get("X-Nomad-Token")
		_, _ = io.WriteString(w, "job "+r.URL.Path)
	}))
	code, body := get(t, c, "", "")
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "Permission denied")
	code, body = get(t, c, "Authorization", "Bearer a.b.c")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "job /v1/job/web", body)
	require.Equal(t, "a.b.c", seen, "the bearer identity reaches the API as X-Nomad-Token")

	require.NoError(t, l.Close())
	_, err = os.Lstat(filepath.Join(secrets, SocketName))
	require.ErrorIs(t, err, os.ErrNotExist, "the socket is removed")
	require.NoError(t, l.Close(), "idempotent")
}

// TestListenReplacesPlantedFiles: a symlink a task planted as api.sock is
// replaced (its target untouched), and a secrets dir that leads out of
// the task dir is refused.
func TestListenReplacesPlantedFiles(t *testing.T) {
	taskDir := t.TempDir()
	secrets := filepath.Join(taskDir, "secrets")
	require.NoError(t, os.MkdirAll(secrets, 0o755))
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("host"), 0o600))
	require.NoError(t, os.Symlink(victim, filepath.Join(secrets, SocketName)))

	s := New(Config{ACLEnabled: true})
	l, err := s.Listen(taskDir, secrets)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	require.Equal(t, "host", string(b))

	outside := t.TempDir()
	other := filepath.Join(t.TempDir(), "task")
	require.NoError(t, os.MkdirAll(other, 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(other, "secrets")))
	_, err = s.Listen(other, filepath.Join(other, "secrets"))
	require.ErrorContains(t, err, "resolves outside")
	_, err = os.Lstat(filepath.Join(outside, SocketName))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing bound outside the task dir")
}
