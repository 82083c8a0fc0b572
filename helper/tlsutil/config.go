package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync/atomic"
)

// Config is the agent's `tls {}` block, as the agent wiring hands it over.
type Config struct {
	// HTTP serves the HTTP API (and the clients' calls to servers) over
	// HTTPS; RPC puts mutual TLS on the servers' rpc port.
	HTTP, RPC bool
	// CAFile, CertFile and KeyFile are PEM files: the CA that signs every
	// agent certificate, and this agent's certificate and key.
	CAFile, CertFile, KeyFile string
	// VerifyServerHostname requires a peer acting as a server to present
	// a certificate naming "server.<region>.nomad": on the rpc port in both
	// directions, and when a client or a client-only agent calls a server.
	VerifyServerHostname bool
	// VerifyHTTPSClient requires every HTTPS API caller to present a
	// certificate signed by the CA. Without it a certificate is only
	// checked when one is presented.
	VerifyHTTPSClient bool
	// RPCUpgradeMode lets the rpc port accept plaintext connections beside
	// TLS ones while a cluster moves to TLS; outbound connections use TLS.
	RPCUpgradeMode bool
	// MinVersion is "tls10", "tls11", "tls12" or "tls13"; "" is "tls12".
	MinVersion string
	// CipherSuites lists Go's names of TLS 1.2 cipher suites; empty means
	// Go's defaults. TLS 1.3 suites are not configurable.
	CipherSuites []string
	// Region names the role certificates: "server.<Region>.nomad".
	Region string
}

// Enabled reports whether any TLS is on.
func (c Config) Enabled() bool { return c.HTTP || c.RPC }

var tlsVersions = map[string]uint16{
	"tls10": tls.VersionTLS10, "tls11": tls.VersionTLS11,
	"tls12": tls.VersionTLS12, "tls13": tls.VersionTLS13,
}

// ParseMinVersion maps tls_min_version to Go's constant ("" is tls12).
func ParseMinVersion(v string) (uint16, error) {
	if v == "" {
		return tls.VersionTLS12, nil
	}
	if n, ok := tlsVersions[v]; ok {
		return n, nil
	}
	names := make([]string, 0, len(tlsVersions))
	for k := range tlsVersions {
		names = append(names, k)
	}
	sort.Strings(names)
	return 0, fmt.Errorf("unknown TLS version %q; use one of %s", v, strings.Join(names, ", "))
}

// ParseCipherSuites maps cipher suite names to Go's IDs; insecure suites
// are refused.
func ParseCipherSuites(names []string) ([]uint16, error) {
	known := map[string]uint16{}
	for _, s := range tls.CipherSuites() {
		known[s.Name] = s.ID
	}
	var out []uint16
	var errs []error
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		id, ok := known[n]
		if !ok {
			errs = append(errs, fmt.Errorf("unsupported or insecure cipher suite %q", n))
			continue
		}
		out = append(out, id)
	}
	return out, errors.Join(errs...)
}

// Agent holds an agent's TLS material and builds the *tls.Config of every
// listener and dialer. The key pair sits behind an atomic pointer that
// every config reads at handshake time, so Reload changes the certificate
// of the next connection; established connections keep theirs.
type Agent struct {
	cfg        Config
	pool       *x509.CertPool
	minVersion uint16
	suites     []uint16
	pair       atomic.Pointer[tls.Certificate]
}

// NewAgent loads cfg's files and checks its settings. The CA file is
// required when RPC or VerifyHTTPSClient is on (someone must verify peers);
// the certificate and key are required when any TLS is on.
func NewAgent(cfg Config) (*Agent, error) {
	a := &Agent{cfg: cfg}
	var err error
	if a.minVersion, err = ParseMinVersion(cfg.MinVersion); err != nil {
		return nil, fmt.Errorf("tls_min_version: %w", err)
	}
	if a.suites, err = ParseCipherSuites(cfg.CipherSuites); err != nil {
		return nil, fmt.Errorf("tls_cipher_suites: %w", err)
	}
	if cfg.CertFile == "" || cfg.KeyFile == "" {
		return nil, errors.New("cert_file and key_file are required when TLS is enabled")
	}
	if cfg.CAFile == "" && (cfg.RPC || cfg.VerifyHTTPSClient) {
		return nil, errors.New("ca_file is required when rpc or verify_https_client is enabled")
	}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ca_file: %w", err)
		}
		a.pool = x509.NewCertPool()
		if !a.pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file %s: no PEM certificate found", cfg.CAFile)
		}
	}
	if err := a.Reload(); err != nil {
		return nil, err
	}
	return a, nil
}

// Config returns the settings a was built from.
func (a *Agent) Config() Config { return a.cfg }

// Reload reads the certificate and key files again. On error the previous
// pair stays in use.
func (a *Agent) Reload() error {
	pair, err := tls.LoadX509KeyPair(a.cfg.CertFile, a.cfg.KeyFile)
	if err != nil {
		return fmt.Errorf("load cert_file %s and key_file %s: %w", a.cfg.CertFile, a.cfg.KeyFile, err)
	}
	a.pair.Store(&pair)
	return nil
}

// Certificate returns the key pair in use.
func (a *Agent) Certificate() *tls.Certificate { return a.pair.Load() }

func (a *Agent) base() *tls.Config {
	return &tls.Config{
		MinVersion:   a.minVersion,
		CipherSuites: a.suites,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return a.pair.Load(), nil
		},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return a.pair.Load(), nil
		},
	}
}

// ServerRoleName is the name a server's certificate must carry.
func (a *Agent) ServerRoleName() string { return RoleName(RoleServer, a.cfg.Region, "") }

// HTTPServerConfig is the HTTPS API listener's config: a client
// certificate signed by the CA is required with VerifyHTTPSClient, and
// verified when presented otherwise.
func (a *Agent) HTTPServerConfig() *tls.Config {
	c := a.base()
	c.NextProtos = []string{"h2", "http/1.1"}
	c.ClientCAs = a.pool
	switch {
	case a.cfg.VerifyHTTPSClient:
		c.ClientAuth = tls.RequireAndVerifyClientCert
	case a.pool != nil:
		c.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return c
}

// RPCServerConfig is the rpc port's config: mutual TLS, and with
// VerifyServerHostname only peers whose certificate names
// "server.<region>.nomad" complete the handshake.
func (a *Agent) RPCServerConfig() *tls.Config {
	c := a.base()
	c.ClientCAs = a.pool
	c.ClientAuth = tls.RequireAndVerifyClientCert
	if a.cfg.VerifyServerHostname {
		name := a.ServerRoleName()
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			return CheckRole(cs.PeerCertificates, name)
		}
	}
	return c
}

// RPCClientConfig is the config of connections to another server's rpc
// port: this agent's certificate is presented, the peer's must chain to
// the CA and, with VerifyServerHostname, name "server.<region>.nomad".
func (a *Agent) RPCClientConfig() *tls.Config { return a.ServerClientConfig() }

// ServerClientConfig is the config of connections to a server (its rpc
// port, or its HTTPS API from a client agent): the peer's certificate must
// chain to the CA and, with VerifyServerHostname, name the server role.
func (a *Agent) ServerClientConfig() *tls.Config {
	name := ""
	if a.cfg.VerifyServerHostname {
		name = a.ServerRoleName()
	}
	return a.PeerClientConfig(name)
}

// PeerClientConfig is the config of a connection to another agent: this
// agent's certificate is presented; the peer's must chain to the CA (to
// the system roots without a CA file) and carry requireName when it is
// not empty. Addresses are not checked against the certificate: agents
// are dialled by IP, and their role name is what identifies them.
func (a *Agent) PeerClientConfig(requireName string) *tls.Config {
	c := a.base()
	c.InsecureSkipVerify = true // replaced by VerifyConnection below
	pool := a.pool
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if err := verifyChain(cs.PeerCertificates, pool, x509.ExtKeyUsageServerAuth); err != nil {
			return err
		}
		if requireName != "" {
			return CheckRole(cs.PeerCertificates, requireName)
		}
		return nil
	}
	return c
}

// verifyChain checks that the leaf of certs chains to pool (the system
// roots when pool is nil) for usage.
func verifyChain(certs []*x509.Certificate, pool *x509.CertPool, usage x509.ExtKeyUsage) error {
	if len(certs) == 0 {
		return errors.New("tls: peer presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{
		Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage},
	})
	if err != nil {
		return fmt.Errorf("tls: peer certificate: %w", err)
	}
	return nil
}

// ErrWrongRole is returned when a verified certificate does not carry the
// role name a connection requires.
var ErrWrongRole = errors.New("tls: certificate does not carry the required role")

// CheckRole reports whether the leaf of certs (already verified against
// the CA) is valid for the DNS name name, e.g. "server.global.nomad".
func CheckRole(certs []*x509.Certificate, name string) error {
	if len(certs) == 0 {
		return errors.New("tls: peer presented no certificate")
	}
	if err := certs[0].VerifyHostname(name); err != nil {
		return fmt.Errorf("%w %q (certificate names %v)", ErrWrongRole, name, certs[0].DNSNames)
	}
	return nil
}
