package agent

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/command/agent/config"
	"github.com/drover-project/drover/helper/tlsutil"
)

// writePair issues a certificate of role and writes it as name.pem and
// name-key.pem under dir.
func writePair(t *testing.T, dir string, ca tlsutil.KeyPair, role tlsutil.Role, name string) (string, string) {
	t.Helper()
	kp, err := tlsutil.GenerateCert(ca, tlsutil.CertOptions{Role: role}, time.Now())
	require.NoError(t, err)
	cert, key := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	require.NoError(t, os.WriteFile(cert, kp.CertPEM, 0o600))
	require.NoError(t, os.WriteFile(key, kp.KeyPEM, 0o600))
	return cert, key
}

// A dev agent (server and client in one process) with every TLS setting
// on: its client registers over HTTPS, API callers need a certificate of
// the CA, plain HTTP gets no API answer, and SIGHUP's reload changes the
// certificate new connections see.
func TestAgentTLS_DevAgent(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlsutil.GenerateCA(tlsutil.CAOptions{}, time.Now())
	require.NoError(t, err)
	caFile := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, ca.CertPEM, 0o600))
	srvCert, srvKey := writePair(t, dir, ca, tlsutil.RoleServer, "server")
	cliCert, cliKey := writePair(t, dir, ca, tlsutil.RoleCLI, "cli")

	cfg := config.DevConfig()
	cfg.Name = fmt.Sprintf("tls-%d", time.Now().UnixNano())
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	cfg.DataDir = t.TempDir()
	cfg.TLS = config.TLSConfig{
		HTTP: true, RPC: true, CAFile: caFile, CertFile: srvCert, KeyFile: srvKey,
		VerifyServerHostname: true, VerifyHTTPSClient: true,
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: os.Stderr})
	a, err := NewAgent(cfg, logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Shutdown() })

	c, err := api.NewClient(&api.Config{Address: "https://" + a.HTTPAddr(), TLSConfig: &api.TLSConfig{
		CACert: caFile, ClientCert: cliCert, ClientKey: cliKey,
	}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		nodes, _, err := c.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	}, 20*time.Second, 50*time.Millisecond, "the agent's client registers with its server over HTTPS")

	// Plain HTTP gets no API answer.
	resp, err := http.Get("http://" + a.HTTPAddr() + "/v1/status/leader")
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		require.Contains(t, string(body), "Client sent an HTTP request to an HTTPS server")
		require.Empty(t, resp.Header.Get("X-Nomad-Index"))
	}

	// HTTPS without a client certificate is refused.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	_, err = anon.Get("https://" + a.HTTPAddr() + "/v1/status/leader")
	require.Error(t, err, "verify_https_client requires a certificate")

	// Reload: replace the files, reload, and a new connection sees the
	// new serial.
	serial := func() string {
		conn, err := tls.Dial("tcp", a.HTTPAddr(), &tls.Config{RootCAs: pool, ServerName: "server.global.nomad",
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				p, err := tls.LoadX509KeyPair(cliCert, cliKey)
				return &p, err
			}})
		require.NoError(t, err)
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := serial()
	writePair(t, dir, ca, tlsutil.RoleServer, "server")
	require.Equal(t, before, serial(), "nothing changes before the reload")
	require.NoError(t, a.ReloadTLS())
	after := serial()
	require.NotEqual(t, before, after)
	_, _, err = c.Jobs().List(nil)
	require.NoError(t, err, "the API keeps working after the reload")
}

func TestAgentTLS_ReloadWithoutTLS(t *testing.T) {
	ta := newTestAgent(t, "")
	require.ErrorIs(t, ta.ReloadTLS(), ErrTLSDisabled)
}

func TestAgentTLS_BadFilesFailStart(t *testing.T) {
	cfg := config.DevConfig()
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	cfg.DataDir = t.TempDir()
	cfg.TLS = config.TLSConfig{HTTP: true, CertFile: "/nonexistent.pem", KeyFile: "/nonexistent-key.pem"}
	_, err := NewAgent(cfg, hclog.NewNullLogger())
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "agent: tls: load cert_file /nonexistent.pem"), err.Error())
}
