package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseTLSBlock(t *testing.T) {
	src := `
tls {
  http = true
  rpc  = true
  ca_file   = "/etc/drover/nomad-agent-ca.pem"
  cert_file = "/etc/drover/global-server-nomad.pem"
  key_file  = "/etc/drover/global-server-nomad-key.pem"
  verify_server_hostname = true
  verify_https_client    = true
  rpc_upgrade_mode       = true
  tls_min_version        = "tls13"
  tls_cipher_suites      = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
}
`
	c, err := Parse("agent.hcl", []byte(src))
	require.NoError(t, err)
	require.Equal(t, TLSConfig{
		HTTP: true, RPC: true,
		CAFile:               "/etc/drover/nomad-agent-ca.pem",
		CertFile:             "/etc/drover/global-server-nomad.pem",
		KeyFile:              "/etc/drover/global-server-nomad-key.pem",
		VerifyServerHostname: true, VerifyHTTPSClient: true, RPCUpgradeMode: true,
		MinVersion:   "tls13",
		CipherSuites: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	}, c.TLS)
	require.Empty(t, c.Ignored, "every key of this block acts")
	u := c.TLS.Util("eu")
	require.Equal(t, []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}, u.CipherSuites)
	require.Equal(t, "eu", u.Region)
	require.True(t, u.VerifyServerHostname && u.VerifyHTTPSClient && u.RPCUpgradeMode)

	j, err := Parse("agent.json", []byte(`{"tls": {"http": true, "cert_file": "c.pem", "key_file": "k.pem"}}`))
	require.NoError(t, err)
	require.Equal(t, TLSConfig{HTTP: true, CertFile: "c.pem", KeyFile: "k.pem"}, j.TLS)

	_, err = Parse("agent.hcl", []byte(`tls { htpp = true }`))
	require.ErrorContains(t, err, `agent.hcl:1:7: Unsupported argument: An argument named "htpp" is not expected here`)
	_, err = Parse("agent.hcl", []byte(`tls { http = "yes please" }`))
	require.ErrorContains(t, err, `Invalid value for "http"`)
	_, err = Parse("agent.hcl", []byte("tls { http = true }\ntls { rpc = true }"))
	require.ErrorContains(t, err, "Duplicate tls block")
}

func TestMergeTLS(t *testing.T) {
	a := &Config{TLS: TLSConfig{HTTP: true, CertFile: "a.pem", KeyFile: "a-key.pem", MinVersion: "tls12"}}
	b := &Config{TLS: TLSConfig{RPC: true, CertFile: "b.pem", CAFile: "ca.pem"}}
	require.Equal(t, TLSConfig{
		HTTP: true, RPC: true, CAFile: "ca.pem", CertFile: "b.pem", KeyFile: "a-key.pem", MinVersion: "tls12",
	}, a.Merge(b).TLS)
}

func TestValidateTLS(t *testing.T) {
	full := TLSConfig{HTTP: true, RPC: true, CAFile: "ca.pem", CertFile: "c.pem", KeyFile: "k.pem",
		VerifyServerHostname: true, VerifyHTTPSClient: true}
	cases := []struct {
		name string
		tls  TLSConfig
		want []string
	}{
		{"off", TLSConfig{}, nil},
		{"full", full, nil},
		{"https only without CA", TLSConfig{HTTP: true, CertFile: "c.pem", KeyFile: "k.pem"}, nil},
		{"no files", TLSConfig{RPC: true}, []string{
			"tls.cert_file: must be set when tls.http or tls.rpc is enabled",
			"tls.key_file: must be set when tls.http or tls.rpc is enabled",
			"tls.ca_file: must be set when tls.rpc or tls.verify_https_client is enabled",
		}},
		{"verify_https_client without https", TLSConfig{RPC: true, VerifyHTTPSClient: true, CAFile: "ca", CertFile: "c", KeyFile: "k"},
			[]string{"tls.verify_https_client: needs tls.http = true"}},
		{"bad min version", TLSConfig{MinVersion: "tls14"},
			[]string{`tls.tls_min_version: unknown TLS version "tls14"; use one of tls10, tls11, tls12, tls13`}},
		{"bad suite", TLSConfig{CipherSuites: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,NOPE"},
			[]string{`tls.tls_cipher_suites: unsupported or insecure cipher suite "NOPE"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validServer()
			c.TLS = tc.tls
			err := c.Validate()
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Len(t, strings.Split(err.Error(), "\n"), len(tc.want), err.Error())
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}
