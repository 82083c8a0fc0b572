package tlsutil

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func parseCert(t *testing.T, p []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(p)
	require.NotNil(t, b)
	require.Equal(t, "CERTIFICATE", b.Type)
	c, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	return c
}

func TestGenerateCA(t *testing.T) {
	ca, err := GenerateCA(CAOptions{}, testNow)
	require.NoError(t, err)
	c := parseCert(t, ca.CertPEM)
	require.True(t, c.IsCA)
	require.True(t, c.BasicConstraintsValid)
	require.Equal(t, x509.KeyUsageCertSign|x509.KeyUsageCRLSign|x509.KeyUsageDigitalSignature, c.KeyUsage)
	require.Contains(t, c.Subject.CommonName, DefaultCACommonName)
	require.Equal(t, testNow.AddDate(0, 0, 5*365), c.NotAfter, "five years by default")
	require.True(t, c.NotBefore.Before(testNow))
	require.NoError(t, c.CheckSignatureFrom(c), "self-signed")
	kb, _ := pem.Decode(ca.KeyPEM)
	require.Equal(t, "EC PRIVATE KEY", kb.Type)

	short, err := GenerateCA(CAOptions{Days: 10, CommonName: "Test CA"}, testNow)
	require.NoError(t, err)
	sc := parseCert(t, short.CertPEM)
	require.Equal(t, testNow.AddDate(0, 0, 10), sc.NotAfter)
	require.Contains(t, sc.Subject.CommonName, "Test CA")

	_, err = GenerateCA(CAOptions{Days: -1}, testNow)
	require.ErrorContains(t, err, "days must be positive")
}

func TestGenerateCert(t *testing.T) {
	ca, err := GenerateCA(CAOptions{}, testNow)
	require.NoError(t, err)
	caCert := parseCert(t, ca.CertPEM)
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	cases := []struct {
		name    string
		opts    CertOptions
		dns     []string
		ips     []string
		ext     []x509.ExtKeyUsage
		cn      string
		expires time.Time
	}{
		{
			name: "server defaults", opts: CertOptions{Role: RoleServer},
			dns: []string{"server.global.nomad", "localhost"}, ips: []string{"127.0.0.1"},
			ext: both, cn: "server.global.nomad", expires: testNow.AddDate(0, 0, 365),
		},
		{
			name: "client defaults", opts: CertOptions{Role: RoleClient},
			dns: []string{"client.global.nomad", "localhost"}, ips: []string{"127.0.0.1"},
			ext: both, cn: "client.global.nomad", expires: testNow.AddDate(0, 0, 365),
		},
		{
			name: "cli defaults", opts: CertOptions{Role: RoleCLI},
			dns: []string{"cli.global.nomad", "localhost"}, ips: nil,
			ext: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, cn: "cli.global.nomad",
			expires: testNow.AddDate(0, 0, 365),
		},
		{
			name: "server with region, extra names and days",
			opts: CertOptions{
				Role: RoleServer, Region: "eu", Days: 30,
				DNSNames:    []string{"nomad.example.com", "localhost"},
				IPAddresses: []net.IP{net.ParseIP("10.0.0.5"), net.ParseIP("127.0.0.1")},
			},
			dns: []string{"server.eu.nomad", "localhost", "nomad.example.com"},
			ips: []string{"127.0.0.1", "10.0.0.5"},
			ext: both, cn: "server.eu.nomad", expires: testNow.AddDate(0, 0, 30),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kp, err := GenerateCert(ca, tc.opts, testNow)
			require.NoError(t, err)
			c := parseCert(t, kp.CertPEM)
			require.Equal(t, tc.dns, c.DNSNames)
			var ips []string
			for _, ip := range c.IPAddresses {
				ips = append(ips, ip.String())
			}
			require.Equal(t, tc.ips, ips)
			require.Equal(t, tc.ext, c.ExtKeyUsage)
			require.Equal(t, x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment, c.KeyUsage)
			require.False(t, c.IsCA)
			require.Equal(t, tc.cn, c.Subject.CommonName)
			require.Equal(t, tc.expires, c.NotAfter)
			pool := x509.NewCertPool()
			pool.AddCert(caCert)
			_, err = c.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: testNow, KeyUsages: tc.ext})
			require.NoError(t, err, "chains to the CA")
			_, err = c.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: tc.expires.Add(time.Hour), KeyUsages: tc.ext})
			require.Error(t, err, "expired after its days")
		})
	}
}

func TestGenerateCertRejects(t *testing.T) {
	ca, err := GenerateCA(CAOptions{}, testNow)
	require.NoError(t, err)
	_, err = GenerateCert(ca, CertOptions{Role: "admin"}, testNow)
	require.ErrorContains(t, err, `role must be "server", "client" or "cli", got "admin"`)
	_, err = GenerateCert(ca, CertOptions{Role: RoleServer, Days: -2}, testNow)
	require.ErrorContains(t, err, "days must be positive")
	leaf, err := GenerateCert(ca, CertOptions{Role: RoleServer}, testNow)
	require.NoError(t, err)
	_, err = GenerateCert(leaf, CertOptions{Role: RoleClient}, testNow)
	require.ErrorContains(t, err, "not a certificate authority")
	_, err = GenerateCert(KeyPair{CertPEM: []byte("junk")}, CertOptions{Role: RoleClient}, testNow)
	require.ErrorContains(t, err, "no PEM certificate")
}

func TestRoleName(t *testing.T) {
	require.Equal(t, "server.global.nomad", RoleName(RoleServer, "", ""))
	require.Equal(t, "client.eu.nomad", RoleName(RoleClient, "eu", ""))
	require.Equal(t, "cli.eu.example", RoleName(RoleCLI, "eu", "example"))
}
