package taskapi

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/helper/pathguard"
)

// SocketName is the socket's name in the task's secrets dir.
const SocketName = "api.sock"

// socketMode lets the task's user, whoever it is, connect; the socket
// admits no request without credentials.
const socketMode = 0o666

// ErrNoCredentials refuses a request that carries no token.
var ErrNoCredentials = errors.New("Permission denied: the task API needs an ACL token or a workload identity")

// ErrUnknownIdentity refuses, with ACLs off, a token that is no workload
// identity of this client's allocations.
var ErrUnknownIdentity = errors.New("Permission denied: not a workload identity of this client's allocations")

// Config configures a Server.
type Config struct {
	// ACLEnabled: the agent's API resolves and authorizes tokens itself.
	ACLEnabled bool
	// KnownIdentity reports whether token is a workload identity signed
	// for one of this client's allocations (used with ACLs off).
	KnownIdentity func(token string) bool
	Logger        hclog.Logger
}

// Server serves the agent's HTTP API on the tasks' sockets.
type Server struct {
	cfg     Config
	handler atomic.Pointer[http.Handler]
}

// New returns a Server; requests get 503 until SetHandler.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.KnownIdentity == nil {
		cfg.KnownIdentity = func(string) bool { return false }
	}
	return &Server{cfg: cfg}
}

// SetHandler sets the agent's HTTP API the sockets serve.
func (s *Server) SetHandler(h http.Handler) { s.handler.Store(&h) }

// RequestToken returns a request's credential: X-Nomad-Token, else an
// "Authorization: Bearer" header; "" when it has none.
func RequestToken(r *http.Request) string {
	if t := strings.TrimSpace(r.Header.Get("X-Nomad-Token")); t != "" {
		return t
	}
	if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// Authenticate decides whether a request with token may reach the API
// (see the package doc); a nil error admits it.
func Authenticate(token string, aclEnabled bool, knownIdentity func(string) bool) error {
	switch {
	case token == "":
		return ErrNoCredentials
	case aclEnabled:
		return nil // the API resolves it, and refuses what it does not know
	case knownIdentity(token):
		return nil
	}
	return ErrUnknownIdentity
}

// ServeHTTP authenticates the request, then hands it to the agent's API
// with the credential in X-Nomad-Token.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok := RequestToken(r)
	if err := Authenticate(tok, s.cfg.ACLEnabled, s.cfg.KnownIdentity); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	h := s.handler.Load()
	if h == nil {
		http.Error(w, "the agent's API is not ready yet", http.StatusServiceUnavailable)
		return
	}
	r.Header.Set("X-Nomad-Token", tok)
	(*h).ServeHTTP(w, r)
}

// Listener is one task's socket.
type Listener struct {
	dir   *os.File // the secrets dir, held open to remove the socket from it
	ln    *net.UnixListener
	srv   *http.Server
	once  sync.Once
	path  string
	serve chan struct{} // closed when Serve returned
}

// Listen binds the socket in secretsDir, which must resolve inside taskDir
// after symlinks, replacing whatever is at its name, and serves s on it
// until Close.
func (s *Server) Listen(taskDir, secretsDir string) (*Listener, error) {
	resolved, err := pathguard.Within(taskDir, secretsDir)
	if err != nil {
		return nil, fmt.Errorf("task api: %w", err)
	}
	dir, err := os.OpenFile(resolved, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("task api: opening %s: %w", secretsDir, err)
	}
	// Through the descriptor: the directory opened, whatever its path
	// becomes; and a short path whatever the data dir's depth.
	fdPath := fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), SocketName)
	if err := unlinkAt(dir, SocketName); err != nil {
		dir.Close()
		return nil, fmt.Errorf("task api: removing the old socket: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: fdPath, Net: "unix"})
	if err != nil {
		dir.Close()
		return nil, fmt.Errorf("task api: %w", err)
	}
	ln.SetUnlinkOnClose(false) // Close unlinks through the descriptor
	if err := os.Chmod(fdPath, socketMode); err != nil {
		ln.Close()
		_ = unlinkAt(dir, SocketName)
		dir.Close()
		return nil, fmt.Errorf("task api: %w", err)
	}
	l := &Listener{dir: dir, ln: ln, path: secretsDir + "/" + SocketName, serve: make(chan struct{}),
		srv: &http.Server{Handler: s, ErrorLog: s.cfg.Logger.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})}}
	go func() {
		defer close(l.serve)
		if err := l.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.Logger.Warn("task api socket stopped", "path", l.path, "error", err)
		}
	}()
	return l, nil
}

// Path is the socket's path (in the task dir, as the task sees it on the
// host).
func (l *Listener) Path() string { return l.path }

// Close stops serving (in-flight requests are cut off: a blocking query
// of the task would hold it up) and removes the socket. Idempotent.
func (l *Listener) Close() error {
	var err error
	l.once.Do(func() {
		err = l.srv.Close()
		<-l.serve
		if uerr := unlinkAt(l.dir, SocketName); uerr != nil && err == nil {
			err = uerr
		}
		_ = l.dir.Close()
	})
	return err
}

// unlinkAt removes name from dir (the entry itself: a symlink is not
// followed); a missing entry is not an error.
func unlinkAt(dir *os.File, name string) error {
	err := unlinkat(int(dir.Fd()), name)
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return err
}
