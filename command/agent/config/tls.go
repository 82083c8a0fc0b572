package config

import (
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/drover-project/drover/helper/tlsutil"
)

// TLSConfig is the `tls` block, with Nomad's keys:
//
//	tls {
//	  http = true   # HTTPS on the API listener (and clients' calls to servers)
//	  rpc  = true   # mutual TLS on the servers' rpc port (raft, forwarding, join)
//	  ca_file   = "nomad-agent-ca.pem"
//	  cert_file = "global-server-nomad.pem"
//	  key_file  = "global-server-nomad-key.pem"
//	  verify_server_hostname = true # servers must present server.<region>.nomad
//	  verify_https_client    = true # API callers must present a certificate of the CA
//	  rpc_upgrade_mode  = false     # rpc port also accepts plaintext (migration)
//	  tls_min_version   = "tls12"
//	  tls_cipher_suites = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,..."
//	}
//
// tls_prefer_server_cipher_suites is accepted and ignored (Go decides).
type TLSConfig struct {
	HTTP                 bool
	RPC                  bool
	CAFile               string
	CertFile             string
	KeyFile              string
	VerifyServerHostname bool
	VerifyHTTPSClient    bool
	RPCUpgradeMode       bool
	MinVersion           string
	// CipherSuites is the comma-separated list as written.
	CipherSuites string
}

// Enabled reports whether HTTPS or rpc TLS is on.
func (t TLSConfig) Enabled() bool { return t.HTTP || t.RPC }

// Util returns the settings in tlsutil's shape for region.
func (t TLSConfig) Util(region string) tlsutil.Config {
	return tlsutil.Config{
		HTTP: t.HTTP, RPC: t.RPC,
		CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile,
		VerifyServerHostname: t.VerifyServerHostname,
		VerifyHTTPSClient:    t.VerifyHTTPSClient,
		RPCUpgradeMode:       t.RPCUpgradeMode,
		MinVersion:           t.MinVersion,
		CipherSuites:         t.cipherSuites(),
		Region:               region,
	}
}

func (t TLSConfig) cipherSuites() []string {
	var out []string
	for s := range strings.SplitSeq(t.CipherSuites, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

var tlsSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "http"}, {Name: "rpc"}, {Name: "ca_file"}, {Name: "cert_file"}, {Name: "key_file"},
		{Name: "verify_server_hostname"}, {Name: "verify_https_client"}, {Name: "rpc_upgrade_mode"},
		{Name: "tls_min_version"}, {Name: "tls_cipher_suites"},
	},
}

func decodeTLS(c *Config, body hcl.Body) hcl.Diagnostics {
	t := &c.TLS
	return decodeBody(c, body, tlsSchema, "tls", map[string]any{
		"http": &t.HTTP, "rpc": &t.RPC,
		"ca_file": &t.CAFile, "cert_file": &t.CertFile, "key_file": &t.KeyFile,
		"verify_server_hostname": &t.VerifyServerHostname,
		"verify_https_client":    &t.VerifyHTTPSClient,
		"rpc_upgrade_mode":       &t.RPCUpgradeMode,
		"tls_min_version":        &t.MinVersion,
		"tls_cipher_suites":      &t.CipherSuites,
	})
}

// mergeTLS overlays o's set fields on out (bools only turn on, as in Nomad).
func mergeTLS(out *TLSConfig, o TLSConfig) {
	out.HTTP = out.HTTP || o.HTTP
	out.RPC = out.RPC || o.RPC
	out.VerifyServerHostname = out.VerifyServerHostname || o.VerifyServerHostname
	out.VerifyHTTPSClient = out.VerifyHTTPSClient || o.VerifyHTTPSClient
	out.RPCUpgradeMode = out.RPCUpgradeMode || o.RPCUpgradeMode
	setString(&out.CAFile, o.CAFile)
	setString(&out.CertFile, o.CertFile)
	setString(&out.KeyFile, o.KeyFile)
	setString(&out.MinVersion, o.MinVersion)
	setString(&out.CipherSuites, o.CipherSuites)
}

// validateTLS reports the tls block's problems through bad.
func (c *Config) validateTLS(bad func(field, format string, args ...any)) {
	t := c.TLS
	if _, err := tlsutil.ParseMinVersion(t.MinVersion); err != nil {
		bad("tls.tls_min_version", "%v", err)
	}
	if _, err := tlsutil.ParseCipherSuites(t.cipherSuites()); err != nil {
		bad("tls.tls_cipher_suites", "%v", err)
	}
	if !t.Enabled() {
		return
	}
	if t.CertFile == "" {
		bad("tls.cert_file", "must be set when tls.http or tls.rpc is enabled")
	}
	if t.KeyFile == "" {
		bad("tls.key_file", "must be set when tls.http or tls.rpc is enabled")
	}
	if t.CAFile == "" && (t.RPC || t.VerifyHTTPSClient) {
		bad("tls.ca_file", "must be set when tls.rpc or tls.verify_https_client is enabled")
	}
	if t.VerifyHTTPSClient && !t.HTTP {
		bad("tls.verify_https_client", "needs tls.http = true")
	}
}
