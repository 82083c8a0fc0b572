package command

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// Meta carries what every command needs: the I/O streams and the global
// flags that select and authenticate against the cluster.
type Meta struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer

	address   string
	namespace string
	token     string
	region    string

	caCert        string
	caPath        string
	clientCert    string
	clientKey     string
	tlsServerName string
	tlsSkipVerify bool
	noColor       bool
	forceColor    bool
}

// generalOptionsHelp documents the flags added by Meta.FlagSet.
const generalOptionsHelp = `General Options:

  -address=<addr>
    The address of the Drover server. Overrides the NOMAD_ADDR environment
    variable if set. Default = http://127.0.0.1:4646

  -region=<region>
    The region of the server to forward commands to. Overrides the
    NOMAD_REGION environment variable if set.

  -namespace=<namespace>
    The target namespace for queries and actions bound to a namespace.
    Overrides the NOMAD_NAMESPACE environment variable if set.
    Defaults to the "default" namespace.

  -token=<token>
    The SecretID of an ACL token to use to authenticate API requests with.
    Overrides the NOMAD_TOKEN environment variable if set.

  -ca-cert, -ca-path, -client-cert, -client-key, -tls-server-name,
  -tls-skip-verify
    TLS settings; they override NOMAD_CACERT, NOMAD_CAPATH,
    NOMAD_CLIENT_CERT, NOMAD_CLIENT_KEY, NOMAD_TLS_SERVER_NAME and
    NOMAD_SKIP_VERIFY.
`

// FlagSet returns a flag set holding the global flags. Errors are reported
// by Meta.parse, so the set itself prints nothing on -h.
func (m *Meta) FlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&m.address, "address", "", "")
	fs.StringVar(&m.namespace, "namespace", "", "")
	fs.StringVar(&m.token, "token", "", "")
	fs.StringVar(&m.region, "region", "", "")
	fs.StringVar(&m.caCert, "ca-cert", "", "")
	fs.StringVar(&m.caPath, "ca-path", "", "")
	fs.StringVar(&m.clientCert, "client-cert", "", "")
	fs.StringVar(&m.clientKey, "client-key", "", "")
	fs.StringVar(&m.tlsServerName, "tls-server-name", "", "")
	fs.BoolVar(&m.tlsSkipVerify, "tls-skip-verify", false, "")
	fs.BoolVar(&m.noColor, "no-color", false, "")
	fs.BoolVar(&m.forceColor, "force-color", false, "")
	return fs
}

// parse parses args into fs. On -h it prints help to stdout; on a bad flag
// it prints the problem and help to stderr. ok is false when the command
// must return code.
func (m *Meta) parse(fs *flag.FlagSet, args []string, help string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(m.Stdout, fullHelp(help))
		return 0, false
	default:
		m.errorf("Error parsing flags: %v", err)
		fmt.Fprintln(m.Stderr, fullHelp(help))
		return 1, false
	}
}

// usageError reports a wrong number of arguments.
func (m *Meta) usageError(msg, help string) int {
	m.errorf("%s", msg)
	fmt.Fprintln(m.Stderr, fullHelp(help))
	return 1
}

func fullHelp(help string) string {
	return strings.TrimSpace(help) + "\n\n" + strings.TrimRight(generalOptionsHelp, "\n")
}

// Client builds an api client from the environment (api.DefaultConfig)
// overridden by the global flags.
func (m *Meta) Client() (*api.Client, error) {
	cfg := api.DefaultConfig()
	if m.address != "" {
		cfg.Address = m.address
	}
	if m.region != "" {
		cfg.Region = m.region
	}
	if m.namespace != "" {
		cfg.Namespace = m.namespace
	}
	if m.token != "" {
		cfg.SecretID = m.token
	}
	tls := cfg.TLSConfig
	setIf(&tls.CACert, m.caCert)
	setIf(&tls.CAPath, m.caPath)
	setIf(&tls.ClientCert, m.clientCert)
	setIf(&tls.ClientKey, m.clientKey)
	setIf(&tls.TLSServerName, m.tlsServerName)
	if m.tlsSkipVerify {
		tls.Insecure = true
	}
	return api.NewClient(cfg)
}

// mustClient returns a client or prints the error; ok is false on error.
// noArg parses the flags of a command that takes no argument beyond its
// flags and connects the API client. When ok is false the command is over
// and code is its exit code.
func (m *Meta) noArg(fs *flag.FlagSet, args []string, help string) (c *api.Client, code int, ok bool) {
	if code, ok := m.parse(fs, args, help); !ok {
		return nil, code, false
	}
	if c, ok = m.mustClient(); !ok {
		return nil, 1, false
	}
	return c, 0, true
}

// oneArg parses the flags of a command that takes exactly one argument
// (argName, for the usage error) and connects the API client. When ok is
// false the command is over and code is its exit code.
func (m *Meta) oneArg(fs *flag.FlagSet, args []string, help, argName string) (c *api.Client, arg string, code int, ok bool) {
	if code, ok := m.parse(fs, args, help); !ok {
		return nil, "", code, false
	}
	if fs.NArg() != 1 {
		return nil, "", m.usageError("This command takes one argument: "+argName, help), false
	}
	if c, ok = m.mustClient(); !ok {
		return nil, "", 1, false
	}
	return c, fs.Arg(0), 0, true
}

func (m *Meta) mustClient() (*api.Client, bool) {
	c, err := m.Client()
	if err != nil {
		m.errorf("Error initializing client: %s", err)
		return nil, false
	}
	return c, true
}

func setIf(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

// outf prints a line to stdout.
func (m *Meta) outf(format string, a ...any) {
	fmt.Fprintf(m.Stdout, format+"\n", a...)
}

// errorf prints a line to stderr.
func (m *Meta) errorf(format string, a ...any) {
	fmt.Fprintf(m.Stderr, format+"\n", a...)
}

// printJSON prints v as indented JSON; it returns the exit code.
func (m *Meta) printJSON(v any) int {
	s, err := prettyJSON(v)
	if err != nil {
		m.errorf("Error formatting JSON: %s", err)
		return 1
	}
	m.outf("%s", s)
	return 0
}

// isTerminal reports whether w is a character device (an interactive TTY).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
