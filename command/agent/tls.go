package agent

import (
	"crypto/tls"
	"errors"
	"net/http"

	"github.com/drover-project/drover/helper/tlsutil"
	"github.com/drover-project/drover/nomad/cluster"
)

// agentTLS is the agent's TLS wiring: the key pair and the configs of the
// HTTPS listener, the rpc port, and the agent's own calls to other agents.
type agentTLS struct {
	util *tlsutil.Agent
	http bool // the API listener (and every agent's) speaks HTTPS
	rpc  bool
	// toServers calls a server's HTTPS API (clients, client-only agents'
	// proxy): with verify_server_hostname the peer must be a server.
	toServers http.RoundTripper
	// toNodes calls a client agent's HTTPS API (the servers' /v1/client
	// proxy): the peer must chain to the CA.
	toNodes http.RoundTripper
}

// newAgentTLS loads the tls block's files; nil when TLS is off.
func newAgentTLS(cfg tlsutil.Config) (*agentTLS, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	u, err := tlsutil.NewAgent(cfg)
	if err != nil {
		return nil, err
	}
	return &agentTLS{
		util: u, http: cfg.HTTP, rpc: cfg.RPC,
		toServers: transport(u.ServerClientConfig()),
		toNodes:   transport(u.PeerClientConfig("")),
	}, nil
}

func transport(c *tls.Config) http.RoundTripper {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.TLSClientConfig = c
	return tr
}

// httpsOn reports whether agents' HTTP APIs speak HTTPS.
func (t *agentTLS) httpsOn() bool { return t != nil && t.http }

// scheme is the scheme of every agent's HTTP API.
func (t *agentTLS) scheme() string {
	if t.httpsOn() {
		return "https"
	}
	return "http"
}

// listenerConfig is the HTTPS API listener's config, nil for plain HTTP.
func (t *agentTLS) listenerConfig() *tls.Config {
	if !t.httpsOn() {
		return nil
	}
	return t.util.HTTPServerConfig()
}

// clusterTLS is the rpc port's mutual TLS, nil when tls.rpc is off.
func (t *agentTLS) clusterTLS() *cluster.TLS {
	if t == nil || !t.rpc {
		return nil
	}
	return &cluster.TLS{
		Server: t.util.RPCServerConfig(), Client: t.util.RPCClientConfig(),
		UpgradeMode: t.util.Config().RPCUpgradeMode,
	}
}

// clientTLS is the client's config for its calls to servers, nil for
// plain HTTP.
func (t *agentTLS) clientTLS() *tls.Config {
	if !t.httpsOn() {
		return nil
	}
	return t.util.ServerClientConfig()
}

// serverTransport and nodeTransport are nil (the default) without HTTPS.
func (t *agentTLS) serverTransport() http.RoundTripper {
	if !t.httpsOn() {
		return nil
	}
	return t.toServers
}

func (t *agentTLS) nodeTransport() http.RoundTripper {
	if !t.httpsOn() {
		return nil
	}
	return t.toNodes
}

// ErrTLSDisabled is returned by ReloadTLS on an agent without TLS.
var ErrTLSDisabled = errors.New("agent: TLS is not enabled")

// ReloadTLS reads the certificate and key files again (SIGHUP). New
// connections, inbound and outbound, use the new pair; established ones
// keep the old. On error the old pair stays in use.
func (a *Agent) ReloadTLS() error {
	if a.tls == nil {
		return ErrTLSDisabled
	}
	return a.tls.util.Reload()
}
