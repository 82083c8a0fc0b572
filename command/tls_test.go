package command

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/helper/tlsutil"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	b, _ := pem.Decode(raw)
	require.NotNil(t, b, path)
	c, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	return c
}

func TestTLSCreateCommands(t *testing.T) {
	t.Chdir(t.TempDir())

	code, out, errOut := runCLI(t, "tls", "ca", "create")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "==> CA certificate saved to: nomad-agent-ca.pem\n==> CA certificate key saved to: nomad-agent-ca-key.pem\n", out)
	ca := readCert(t, "nomad-agent-ca.pem")
	require.True(t, ca.IsCA)
	fi, err := os.Stat("nomad-agent-ca-key.pem")
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "keys are private")

	code, _, errOut = runCLI(t, "tls", "ca", "create")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "file nomad-agent-ca.pem already exists")

	cases := []struct {
		args  []string
		files [2]string
		dns   []string
		ips   []string
	}{
		{[]string{"-server"}, [2]string{"global-server-nomad.pem", "global-server-nomad-key.pem"},
			[]string{"server.global.nomad", "localhost"}, []string{"127.0.0.1"}},
		{[]string{"-client"}, [2]string{"global-client-nomad.pem", "global-client-nomad-key.pem"},
			[]string{"client.global.nomad", "localhost"}, []string{"127.0.0.1"}},
		{[]string{"-cli"}, [2]string{"global-cli-nomad.pem", "global-cli-nomad-key.pem"},
			[]string{"cli.global.nomad", "localhost"}, nil},
		{[]string{"-server", "-region", "eu", "-dc", "dc2", "-days", "30", "-additional-dnsname", "srv.example.com",
			"-additional-dnsname", "other.example.com", "-additional-ipaddress", "10.1.2.3"},
			[2]string{"eu-server-nomad.pem", "eu-server-nomad-key.pem"},
			[]string{"server.eu.nomad", "localhost", "srv.example.com", "other.example.com"}, []string{"127.0.0.1", "10.1.2.3"}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, append([]string{"tls", "cert", "create"}, tc.args...)...)
			require.Equal(t, 0, code, errOut)
			require.Contains(t, out, "==> Using CA file nomad-agent-ca.pem and CA key nomad-agent-ca-key.pem")
			require.Contains(t, out, "Certificate saved to: "+tc.files[0])
			require.Contains(t, out, "Certificate key saved to: "+tc.files[1])
			require.Equal(t, tc.args[0] == "-server", strings.Contains(out, "WARNING: Server Certificates grants authority"))
			c := readCert(t, tc.files[0])
			require.Equal(t, tc.dns, c.DNSNames)
			var ips []string
			for _, ip := range c.IPAddresses {
				ips = append(ips, ip.String())
			}
			require.Equal(t, tc.ips, ips)
			require.NoError(t, c.CheckSignatureFrom(ca))
			_, err := tls.LoadX509KeyPair(tc.files[0], tc.files[1])
			require.NoError(t, err, "certificate and key match")
		})
	}
	require.WithinDuration(t, time.Now().AddDate(0, 0, 30), readCert(t, "eu-server-nomad.pem").NotAfter, time.Minute)

	bad := []struct {
		args []string
		want string
	}{
		{[]string{}, "exactly one of -server, -client or -cli is required"},
		{[]string{"-server", "-client"}, "exactly one of -server, -client or -cli is required"},
		{[]string{"-client", "-days", "0"}, "-days must be a positive number of days, got 0"},
		{[]string{"-client", "-additional-ipaddress", "nope"}, `-additional-ipaddress "nope" is not an IP address`},
		{[]string{"-client", "-ca", "missing.pem"}, "Error reading the CA certificate"},
		{[]string{"-server"}, "file global-server-nomad.pem already exists"},
		{[]string{"-client", "extra"}, "This command takes no arguments"},
		{[]string{"-client", "-bogus"}, "flag provided but not defined: -bogus"},
	}
	for _, tc := range bad {
		code, _, errOut := runCLI(t, append([]string{"tls", "cert", "create"}, tc.args...)...)
		require.Equal(t, 1, code, tc.args)
		require.Contains(t, errOut, tc.want, tc.args)
	}
	code, out, _ = runCLI(t, "tls", "cert", "create", "-h")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Usage: drover tls cert create")
}

// The CLI reaches an HTTPS agent that requires client certificates with
// NOMAD_ADDR=https://..., NOMAD_CACERT, NOMAD_CLIENT_CERT and
// NOMAD_CLIENT_KEY, or with the matching flags; without a certificate it
// fails.
func TestCLIUsesTLSSettings(t *testing.T) {
	f := newFakeServer(t)
	dir := t.TempDir()
	ca, err := tlsutil.GenerateCA(tlsutil.CAOptions{}, time.Now())
	require.NoError(t, err)
	caFile := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, ca.CertPEM, 0o600))
	write := func(role tlsutil.Role) (string, string) {
		kp, err := tlsutil.GenerateCert(ca, tlsutil.CertOptions{Role: role}, time.Now())
		require.NoError(t, err)
		c, k := filepath.Join(dir, string(role)+".pem"), filepath.Join(dir, string(role)+"-key.pem")
		require.NoError(t, os.WriteFile(c, kp.CertPEM, 0o600))
		require.NoError(t, os.WriteFile(k, kp.KeyPEM, 0o600))
		return c, k
	}
	srvCert, srvKey := write(tlsutil.RoleServer)
	cliCert, cliKey := write(tlsutil.RoleCLI)
	agentTLS, err := tlsutil.NewAgent(tlsutil.Config{HTTP: true, CAFile: caFile, CertFile: srvCert, KeyFile: srvKey, VerifyHTTPSClient: true})
	require.NoError(t, err)
	// Not httptest's StartTLS: it would add its own certificate.
	ln, err := tls.Listen("tcp", "127.0.0.1:0", agentTLS.HTTPServerConfig())
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(f.serve)}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	addr := "https://" + ln.Addr().String()
	for _, v := range []string{"NOMAD_CACERT", "NOMAD_CLIENT_CERT", "NOMAD_CLIENT_KEY", "NOMAD_TLS_SERVER_NAME", "NOMAD_SKIP_VERIFY", "NOMAD_CAPATH"} {
		t.Setenv(v, "")
	}
	t.Setenv("NOMAD_ADDR", addr)

	code, _, errOut := runCLI(t, "node", "status")
	require.Equal(t, 1, code, "no CA: the server's certificate is not trusted")
	require.Contains(t, errOut, "certificate")

	t.Setenv("NOMAD_CACERT", caFile)
	code, _, errOut = runCLI(t, "node", "status")
	require.Equal(t, 1, code, "no client certificate: refused")
	require.NotEmpty(t, errOut)

	t.Setenv("NOMAD_CLIENT_CERT", cliCert)
	t.Setenv("NOMAD_CLIENT_KEY", cliKey)
	code, out, errOut := runCLI(t, "node", "status")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "No nodes registered\n", out)

	// The flags do the same, overriding the environment.
	t.Setenv("NOMAD_CLIENT_CERT", "")
	t.Setenv("NOMAD_CLIENT_KEY", "")
	t.Setenv("NOMAD_CACERT", "")
	code, _, errOut = runCLI(t, "node", "status", "-ca-cert", caFile, "-client-cert", cliCert, "-client-key", cliKey)
	require.Equal(t, 0, code, errOut)

	// NOMAD_TLS_SERVER_NAME is checked against the server's certificate.
	t.Setenv("NOMAD_CACERT", caFile)
	t.Setenv("NOMAD_CLIENT_CERT", cliCert)
	t.Setenv("NOMAD_CLIENT_KEY", cliKey)
	t.Setenv("NOMAD_TLS_SERVER_NAME", "server.global.nomad")
	code, _, errOut = runCLI(t, "node", "status")
	require.Equal(t, 0, code, errOut)
	t.Setenv("NOMAD_TLS_SERVER_NAME", "server.elsewhere.nomad")
	code, _, errOut = runCLI(t, "node", "status")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "server.elsewhere.nomad")

	// NOMAD_SKIP_VERIFY trusts any server certificate.
	t.Setenv("NOMAD_TLS_SERVER_NAME", "")
	t.Setenv("NOMAD_CACERT", "")
	t.Setenv("NOMAD_SKIP_VERIFY", "true")
	code, _, errOut = runCLI(t, "node", "status")
	require.Equal(t, 0, code, errOut)
}
