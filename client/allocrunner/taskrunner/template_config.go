package taskrunner

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	ctconf "github.com/hashicorp/consul-template/config"
	"github.com/hashicorp/consul-template/renderer"

	"github.com/drover-project/drover/client/allocrunner/taskenv"
	"github.com/drover-project/drover/helper/pathguard"
	"github.com/drover-project/drover/nomad/structs"
)

// TemplateConfig is how a client renders its tasks' template blocks: the
// road to a server's HTTP API (consul-template's Nomad client reads
// variables and services there with the task's workload identity) and the
// client's template block.
type TemplateConfig struct {
	// Dial connects to one of the servers' HTTP API, TLS included when the
	// cluster uses it; the connection then speaks plain HTTP. Required.
	Dial func(ctx context.Context) (net.Conn, error)
	// FunctionDenylist are functions templates may not call; nil is
	// DefaultTemplateFunctionDenylist.
	FunctionDenylist []string
	// DisableFileSandbox lets templates read files outside the
	// allocation directory (source, the file function).
	DisableFileSandbox bool
}

// DefaultTemplateFunctionDenylist is the client's function_denylist when
// its template block sets none, as in Nomad.
var DefaultTemplateFunctionDenylist = []string{"plugin", "writeToFile"}

// ServerDialer returns a TemplateConfig.Dial that tries servers
// ("host:port") in order, wrapping the connection in TLS with tlsCfg when
// it is set (the server name defaults to the server's host).
func ServerDialer(servers []string, tlsCfg *tls.Config) func(ctx context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var errs []error
		for _, s := range servers {
			addr := s
			if i := strings.Index(addr, "://"); i >= 0 {
				addr = addr[i+3:]
			}
			addr = strings.TrimSuffix(addr, "/")
			var d net.Dialer
			conn, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if tlsCfg == nil {
				return conn, nil
			}
			c := tlsCfg.Clone()
			if c.ServerName == "" {
				c.ServerName, _, _ = net.SplitHostPort(addr)
			}
			tc := tls.Client(conn, c)
			if err := tc.HandshakeContext(ctx); err != nil {
				conn.Close()
				errs = append(errs, err)
				continue
			}
			return tc, nil
		}
		return nil, fmt.Errorf("no server reachable: %w", errors.Join(errs...))
	}
}

// ctDialer adapts Dial to consul-template's transport dialer; the address
// it is asked for is a placeholder, Dial picks the server. It keeps the
// connections it made so that closeAll ends the blocking queries still
// under way when the task stops (the library's queries take no context).
type ctDialer struct {
	dial func(ctx context.Context) (net.Conn, error)

	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

func newCTDialer(dial func(ctx context.Context) (net.Conn, error)) *ctDialer {
	return &ctDialer{dial: dial, conns: map[*trackedConn]struct{}{}}
}

func (d *ctDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

func (d *ctDialer) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, errors.New("the task's templates are stopped")
	}
	c, err := d.dial(ctx)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, d: d}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		c.Close()
		return nil, errors.New("the task's templates are stopped")
	}
	d.conns[tc] = struct{}{}
	return tc, nil
}

// closeAll closes every open connection and refuses new ones.
func (d *ctDialer) closeAll() {
	d.mu.Lock()
	d.closed = true
	conns := d.conns
	d.conns = map[*trackedConn]struct{}{}
	d.mu.Unlock()
	for c := range conns {
		c.Conn.Close()
	}
}

// open is the number of connections not closed yet.
func (d *ctDialer) open() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.conns)
}

type trackedConn struct {
	net.Conn
	d *ctDialer
}

func (c *trackedConn) Close() error {
	c.d.mu.Lock()
	delete(c.d.conns, c)
	c.d.mu.Unlock()
	return c.Conn.Close()
}

// templatePaths are the host paths of one template.
type templatePaths struct {
	source string // "" for an embedded template
	dest   string
}

// relativeDirs is the environment template paths are interpolated with:
// NOMAD_ALLOC_DIR, NOMAD_TASK_DIR and NOMAD_SECRETS_DIR relative to the
// task dir (as in Nomad), so that "${NOMAD_SECRETS_DIR}/x" is secrets/x
// whatever the driver's view of the directories.
func relativeDirs(env *taskenv.Env) *taskenv.Env {
	return env.With(map[string]string{
		"NOMAD_ALLOC_DIR":   filepath.Join("..", "alloc"),
		"NOMAD_TASK_DIR":    "local",
		"NOMAD_SECRETS_DIR": "secrets",
	})
}

// resolveTemplatePaths interpolates a template's source and destination
// and checks them: the destination is taken relative to the task dir; a
// relative source too. With the file sandbox (the default) both must stay
// inside the allocation directory once every symlink is followed.
func resolveTemplatePaths(t *structs.Template, env *taskenv.Env, allocDir, taskDir string, sandbox bool) (templatePaths, error) {
	var out templatePaths
	if t.SourcePath != "" {
		src := env.Replace(t.SourcePath)
		if !filepath.IsAbs(src) {
			src = filepath.Join(taskDir, src)
		}
		out.source = filepath.Clean(src)
		if sandbox {
			p, err := pathguard.Within(allocDir, out.source)
			if err != nil {
				return out, errors.New("template source path escapes alloc directory")
			}
			out.source = p
		}
	}
	dest := filepath.Join(taskDir, env.Replace(t.DestPath))
	out.dest = filepath.Clean(dest)
	if sandbox {
		p, err := pathguard.Within(allocDir, out.dest)
		if err != nil {
			return out, errors.New("template destination path escapes alloc directory")
		}
		out.dest = p
	}
	return out, nil
}

// sandboxedReader reads a template source again through the sandbox
// check each time (a symlink may have been swapped in since).
func sandboxedReader(allocDir string, sandbox bool) ctconf.Reader {
	return func(path string) ([]byte, error) {
		if sandbox {
			p, err := pathguard.Within(allocDir, path)
			if err != nil {
				return nil, errors.New("template source path escapes alloc directory")
			}
			path = p
		}
		return os.ReadFile(path)
	}
}

// sandboxedRenderer writes a rendered template only inside the allocation
// directory (checked again on every write), replacing the file whole.
func sandboxedRenderer(allocDir string, sandbox bool) renderer.Renderer {
	return func(in *renderer.RenderInput) (*renderer.RenderResult, error) {
		if sandbox {
			p, err := pathguard.Within(allocDir, in.Path)
			if err != nil {
				return nil, errors.New("template destination path escapes alloc directory")
			}
			cp := *in
			cp.Path = p
			in = &cp
		}
		return renderer.Render(in)
	}
}

// ctTemplate is the consul-template config of one template.
func ctTemplate(t *structs.Template, p templatePaths, deny []string, sandboxDir string, funcs map[string]any) (*ctconf.TemplateConfig, error) {
	tc := ctconf.DefaultTemplateConfig()
	if p.source != "" {
		tc.Source = ctconf.String(p.source)
	} else {
		tc.Contents = ctconf.String(t.EmbeddedTmpl)
	}
	tc.Destination = ctconf.String(p.dest)
	tc.CreateDestDirs = ctconf.Bool(true)
	tc.ErrMissingKey = ctconf.Bool(t.ErrMissingKey)
	tc.ErrFatal = ctconf.Bool(true)
	perms := "0644"
	if t.Perms != "" {
		perms = t.Perms
	}
	m, err := strconv.ParseUint(perms, 8, 12)
	if err != nil {
		return nil, fmt.Errorf("perms %q: %w", t.Perms, err)
	}
	tc.Perms = ctconf.FileMode(os.FileMode(m))
	if t.Uid != nil {
		tc.User = ctconf.String(strconv.Itoa(*t.Uid))
	}
	if t.Gid != nil {
		tc.Group = ctconf.String(strconv.Itoa(*t.Gid))
	}
	if t.LeftDelim != "" {
		tc.LeftDelim = ctconf.String(t.LeftDelim)
	}
	if t.RightDelim != "" {
		tc.RightDelim = ctconf.String(t.RightDelim)
	}
	if w := t.Wait; w != nil && (w.Min != nil || w.Max != nil) {
		wc := &ctconf.WaitConfig{Enabled: ctconf.Bool(true)}
		if w.Min != nil {
			wc.Min = ctconf.TimeDuration(*w.Min)
		}
		if w.Max != nil {
			wc.Max = ctconf.TimeDuration(*w.Max)
		} else if w.Min != nil {
			wc.Max = ctconf.TimeDuration(4 * *w.Min)
		}
		tc.Wait = wc
	}
	tc.FunctionDenylist = append([]string(nil), deny...)
	if sandboxDir != "" {
		tc.SandboxPath = ctconf.String(sandboxDir)
	}
	tc.ExtFuncMap = funcs
	return tc, nil
}

// templateFuncs replaces the functions a task's templates may not reach
// here: the Consul and Vault ones fail naming why (a source file is only
// seen at render time), and env, mustEnv and envOrDefault read the task's
// environment, never the client agent's.
func templateFuncs(env map[string]string) map[string]any {
	out := map[string]any{}
	for _, list := range [][]string{structs.TemplateConsulFuncs, structs.TemplateVaultFuncs} {
		for _, fn := range list {
			why := structs.TemplateFuncRefusal(fn)
			out[fn] = func(...any) (any, error) {
				return nil, fmt.Errorf("function %q: %s", fn, why)
			}
		}
	}
	out["env"] = func(k string) (string, error) { return env[k], nil }
	out["mustEnv"] = func(k string) (string, error) {
		if v := env[k]; v != "" {
			return v, nil
		}
		return "", fmt.Errorf("required environment variable %s is empty", k)
	}
	out["envOrDefault"] = func(k, def string) (string, error) {
		if v, ok := env[k]; ok && v != "" {
			return v, nil
		}
		return def, nil
	}
	return out
}

// parseDotenv reads an env = true template's rendered file: KEY=VALUE
// lines (an optional "export " prefix, values optionally quoted, "#"
// comments and blank lines skipped), as Nomad reads them.
func parseDotenv(data []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("line %d: want KEY=VALUE", n)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"') {
			uq, err := strconv.Unquote(v)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			v = uq
		} else if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			v = v[1 : len(v)-1]
		} else if i := strings.Index(v, " #"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		out[k] = v
	}
	return out, sc.Err()
}

// templateDefaultScriptTimeout bounds a change_script that sets no timeout.
const templateDefaultScriptTimeout = 5 * time.Second
