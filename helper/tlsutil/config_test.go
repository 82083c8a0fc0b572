package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pki is a CA and certificates of each role written to a directory.
type pki struct {
	dir string
	ca  KeyPair
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	ca, err := GenerateCA(CAOptions{}, time.Now())
	require.NoError(t, err)
	p := &pki{dir: t.TempDir(), ca: ca}
	require.NoError(t, os.WriteFile(p.caFile(), ca.CertPEM, 0o600))
	return p
}

func (p *pki) caFile() string { return filepath.Join(p.dir, "ca.pem") }

// issue writes a certificate of role and returns its cert and key paths.
func (p *pki) issue(t *testing.T, role Role, name string) (string, string) {
	t.Helper()
	kp, err := GenerateCert(p.ca, CertOptions{Role: role}, time.Now())
	require.NoError(t, err)
	cert, key := filepath.Join(p.dir, name+".pem"), filepath.Join(p.dir, name+"-key.pem")
	require.NoError(t, os.WriteFile(cert, kp.CertPEM, 0o600))
	require.NoError(t, os.WriteFile(key, kp.KeyPEM, 0o600))
	return cert, key
}

func (p *pki) agent(t *testing.T, role Role, name string, mod func(*Config)) *Agent {
	t.Helper()
	cert, key := p.issue(t, role, name)
	cfg := Config{HTTP: true, RPC: true, CAFile: p.caFile(), CertFile: cert, KeyFile: key, Region: "global"}
	if mod != nil {
		mod(&cfg)
	}
	a, err := NewAgent(cfg)
	require.NoError(t, err)
	return a
}

// handshake runs a TLS handshake over a pipe plus one byte of data each
// way (TLS 1.3 reports a refused client certificate only after the
// client's handshake returns) and returns the server's and client's errors
// and the certificate the client saw.
func handshake(t *testing.T, srvCfg, cliCfg *tls.Config) (srvErr, cliErr error, seen *tls.ConnectionState) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	_ = a.SetDeadline(time.Now().Add(5 * time.Second))
	_ = b.SetDeadline(time.Now().Add(5 * time.Second))
	done := make(chan error, 1)
	go func() {
		s := tls.Server(a, srvCfg)
		err := s.Handshake()
		if err == nil {
			_, err = s.Write([]byte{1})
		}
		if err != nil {
			_ = a.Close()
		}
		done <- err
	}()
	c := tls.Client(b, cliCfg)
	cliErr = c.Handshake()
	if cliErr == nil {
		buf := make([]byte, 1)
		_, cliErr = c.Read(buf)
		st := c.ConnectionState()
		seen = &st
	}
	_ = b.Close()
	return <-done, cliErr, seen
}

func refused(srvErr, cliErr error) bool { return srvErr != nil || cliErr != nil }

func TestRPCServerRoleCheck(t *testing.T) {
	p := newPKI(t)
	other := newPKI(t)
	verify := func(c *Config) { c.VerifyServerHostname = true }
	server := p.agent(t, RoleServer, "server", verify)
	peer := p.agent(t, RoleServer, "peer", verify)
	client := p.agent(t, RoleClient, "client", verify)
	cli := p.agent(t, RoleCLI, "cli", verify)
	foreign := other.agent(t, RoleServer, "foreign", verify)

	cases := []struct {
		name    string
		dialer  *Agent
		refused bool
	}{
		{"a server of the same CA joins", peer, false},
		{"a client certificate cannot act as a server", client, true},
		{"a CLI certificate cannot act as a server", cli, true},
		{"a server certificate of another CA is refused", foreign, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, c, _ := handshake(t, server.RPCServerConfig(), tc.dialer.RPCClientConfig())
			require.Equal(t, tc.refused, refused(s, c), "server: %v, client: %v", s, c)
			if tc.refused && tc.dialer != foreign {
				require.ErrorIs(t, s, ErrWrongRole)
			}
		})
	}

	t.Run("no client certificate at all is refused", func(t *testing.T) {
		cfg := peer.RPCClientConfig()
		cfg.GetClientCertificate = nil
		s, c, _ := handshake(t, server.RPCServerConfig(), cfg)
		require.True(t, refused(s, c))
	})

	t.Run("a server dialling a peer with a client certificate refuses it", func(t *testing.T) {
		s, c, _ := handshake(t, client.RPCServerConfig(), server.RPCClientConfig())
		require.True(t, refused(s, c))
		require.ErrorIs(t, c, ErrWrongRole)
	})

	t.Run("without verify_server_hostname only the chain counts", func(t *testing.T) {
		lax := p.agent(t, RoleServer, "lax", nil)
		laxClient := p.agent(t, RoleClient, "laxclient", nil)
		s, c, _ := handshake(t, lax.RPCServerConfig(), laxClient.RPCClientConfig())
		require.False(t, refused(s, c), "server: %v, client: %v", s, c)
		laxForeign := other.agent(t, RoleServer, "laxforeign", nil)
		s, c, _ = handshake(t, lax.RPCServerConfig(), laxForeign.RPCClientConfig())
		require.True(t, refused(s, c), "another CA is refused whatever the hostname setting")
	})
}

func TestHTTPServerClientAuth(t *testing.T) {
	p := newPKI(t)
	other := newPKI(t)
	strict := p.agent(t, RoleServer, "strict", func(c *Config) { c.VerifyHTTPSClient = true })
	loose := p.agent(t, RoleServer, "loose", nil)
	cli := p.agent(t, RoleCLI, "cli", nil)
	foreign := other.agent(t, RoleCLI, "foreign", nil)
	anon := cli.PeerClientConfig("")
	anon.GetClientCertificate = nil

	s, c, _ := handshake(t, strict.HTTPServerConfig(), cli.PeerClientConfig(""))
	require.False(t, refused(s, c), "a CLI certificate of the CA is accepted: %v %v", s, c)
	s, c, _ = handshake(t, strict.HTTPServerConfig(), anon)
	require.True(t, refused(s, c), "verify_https_client requires a certificate")
	s, c, _ = handshake(t, strict.HTTPServerConfig(), foreign.PeerClientConfig(""))
	require.True(t, refused(s, c), "another CA's certificate is refused (and its CA does not trust ours)")

	s, c, _ = handshake(t, loose.HTTPServerConfig(), anon)
	require.False(t, refused(s, c), "without verify_https_client no certificate is needed: %v %v", s, c)
	foreignTrustingUs := foreign.PeerClientConfig("")
	foreignTrustingUs.InsecureSkipVerify, foreignTrustingUs.VerifyConnection = true, nil
	s, c, _ = handshake(t, loose.HTTPServerConfig(), foreignTrustingUs)
	require.True(t, refused(s, c), "a presented certificate is verified even when not required")
}

func TestReloadServesNewCertificate(t *testing.T) {
	p := newPKI(t)
	srv := p.agent(t, RoleServer, "server", nil)
	cli := p.agent(t, RoleClient, "client", nil)
	_, _, st := handshake(t, srv.HTTPServerConfig(), cli.PeerClientConfig(""))
	require.NotNil(t, st)
	before := st.PeerCertificates[0].SerialNumber

	// Replace the files in place, then reload.
	kp, err := GenerateCert(p.ca, CertOptions{Role: RoleServer}, time.Now())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(srv.Config().CertFile, kp.CertPEM, 0o600))
	require.NoError(t, os.WriteFile(srv.Config().KeyFile, kp.KeyPEM, 0o600))
	cfg := srv.HTTPServerConfig() // built before the reload: still picks the new pair
	_, _, st = handshake(t, cfg, cli.PeerClientConfig(""))
	require.Equal(t, before, st.PeerCertificates[0].SerialNumber, "no reload yet, old certificate")
	require.NoError(t, srv.Reload())
	_, _, st = handshake(t, cfg, cli.PeerClientConfig(""))
	require.NotEqual(t, before, st.PeerCertificates[0].SerialNumber, "new connections get the new certificate")
	require.Equal(t, parseCert(t, kp.CertPEM).SerialNumber, st.PeerCertificates[0].SerialNumber)

	// A broken file leaves the working pair in place.
	require.NoError(t, os.WriteFile(srv.Config().KeyFile, []byte("garbage"), 0o600))
	require.Error(t, srv.Reload())
	_, _, st = handshake(t, cfg, cli.PeerClientConfig(""))
	require.NotNil(t, st)
	require.Equal(t, parseCert(t, kp.CertPEM).SerialNumber, st.PeerCertificates[0].SerialNumber)
}

func TestMinVersionIsEnforced(t *testing.T) {
	p := newPKI(t)
	srv := p.agent(t, RoleServer, "server", func(c *Config) { c.MinVersion = "tls13" })
	cli := p.agent(t, RoleClient, "client", nil)
	old := cli.PeerClientConfig("")
	old.MaxVersion = tls.VersionTLS12
	s, c, _ := handshake(t, srv.HTTPServerConfig(), old)
	require.True(t, refused(s, c), "a TLS 1.2 client is refused by a tls13 minimum")
	s, c, st := handshake(t, srv.HTTPServerConfig(), cli.PeerClientConfig(""))
	require.False(t, refused(s, c))
	require.Equal(t, uint16(tls.VersionTLS13), st.Version)
}

func TestNewAgentValidation(t *testing.T) {
	p := newPKI(t)
	cert, key := p.issue(t, RoleServer, "s")
	cases := []struct {
		name string
		cfg  Config
		err  string
	}{
		{"missing key", Config{HTTP: true, CertFile: cert}, "cert_file and key_file are required"},
		{"rpc needs a CA", Config{RPC: true, CertFile: cert, KeyFile: key}, "ca_file is required"},
		{"verify_https_client needs a CA", Config{HTTP: true, VerifyHTTPSClient: true, CertFile: cert, KeyFile: key}, "ca_file is required"},
		{"bad version", Config{HTTP: true, CertFile: cert, KeyFile: key, MinVersion: "ssl3"}, `tls_min_version: unknown TLS version "ssl3"`},
		{"bad suite", Config{HTTP: true, CertFile: cert, KeyFile: key, CipherSuites: []string{"TLS_RSA_WITH_RC4_128_SHA"}}, "unsupported or insecure cipher suite"},
		{"unreadable CA", Config{RPC: true, CAFile: filepath.Join(p.dir, "nope.pem"), CertFile: cert, KeyFile: key}, "ca_file"},
		{"CA without PEM", Config{RPC: true, CAFile: key + "x", CertFile: cert, KeyFile: key}, "ca_file"},
		{"cert and key mismatch", Config{HTTP: true, CertFile: cert, KeyFile: p.caFile()}, "load cert_file"},
	}
	require.NoError(t, os.WriteFile(key+"x", []byte("not pem"), 0o600))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewAgent(tc.cfg)
			require.ErrorContains(t, err, tc.err)
		})
	}
	ok, err := NewAgent(Config{HTTP: true, CertFile: cert, KeyFile: key, CipherSuites: []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}})
	require.NoError(t, err)
	require.Equal(t, []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}, ok.HTTPServerConfig().CipherSuites)
}

func TestCheckRole(t *testing.T) {
	p := newPKI(t)
	leafOf := func(role Role) *x509.Certificate {
		a := p.agent(t, role, string(role), nil)
		return a.Certificate().Leaf
	}
	server, client, cli := leafOf(RoleServer), leafOf(RoleClient), leafOf(RoleCLI)
	cases := []struct {
		name string
		cert *x509.Certificate
		want string
		ok   bool
	}{
		{"server is a server", server, "server.global.nomad", true},
		{"server of another region is not", server, "server.eu.nomad", false},
		{"client is not a server", client, "server.global.nomad", false},
		{"client is a client", client, "client.global.nomad", true},
		{"cli is not a server", cli, "server.global.nomad", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckRole([]*x509.Certificate{tc.cert}, tc.want)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrWrongRole)
			}
		})
	}
	require.Error(t, CheckRole(nil, "server.global.nomad"))
}
