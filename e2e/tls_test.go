package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/testutil/taskprocs"
)

// tlsPKI is a CA and certificates made with `drover tls` in dir.
type tlsPKI struct{ dir string }

// newTLSPKI runs `drover tls ca create` and `tls cert create` for each of
// roles in a fresh directory.
func newTLSPKI(t testing.TB, roles ...string) *tlsPKI {
	t.Helper()
	p := &tlsPKI{dir: t.TempDir()}
	p.run(t, "tls", "ca", "create")
	for _, r := range roles {
		p.run(t, "tls", "cert", "create", "-"+r)
	}
	return p
}

func (p *tlsPKI) run(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command(droverBin, args...)
	cmd.Dir = p.dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "drover %v: %s", args, out)
	return string(out)
}

func (p *tlsPKI) path(name string) string { return filepath.Join(p.dir, name) }
func (p *tlsPKI) ca() string              { return p.path("nomad-agent-ca.pem") }
func (p *tlsPKI) cert(role string) string { return p.path("global-" + role + "-nomad.pem") }
func (p *tlsPKI) key(role string) string  { return p.path("global-" + role + "-nomad-key.pem") }

// tlsBlock is an agent's tls block with every check on, holding the
// certificate of role from p (the CA always from ca).
func tlsBlock(ca, p *tlsPKI, role string) string {
	return fmt.Sprintf(`tls {
  http = true
  rpc  = true
  ca_file   = %q
  cert_file = %q
  key_file  = %q
  verify_server_hostname = true
  verify_https_client    = true
}
`, ca.ca(), p.cert(role), p.key(role))
}

// startTLSAgent writes body (plus name, data_dir, ports) and starts it.
func startTLSAgent(t testing.TB, name, body string, httpPort, rpcPort int) *agentProc {
	t.Helper()
	dir := t.TempDir()
	p := &agentProc{name: name, dataDir: filepath.Join(dir, "data"), httpPort: httpPort, rpcPort: rpcPort,
		config: filepath.Join(dir, "agent.hcl"), logPath: filepath.Join(dir, "agent.log")}
	hcl := fmt.Sprintf(`name = %q
data_dir = %q
bind_addr = "127.0.0.1"
log_level = "DEBUG"
ports {
  http = %d
  rpc  = %d
}
%s`, name, p.dataDir, httpPort, rpcPort, body)
	require.NoError(t, os.WriteFile(p.config, []byte(hcl), 0o600))
	taskprocs.Cleanup(t, p.dataDir) // after the kill below: executors outlive a killed agent
	p.start(t)
	t.Cleanup(p.kill)
	return p
}

func (p *agentProc) httpsAddr() string { return fmt.Sprintf("https://127.0.0.1:%d", p.httpPort) }

// tlsClient is an API client of p with the operator's CLI certificate.
func tlsClient(t testing.TB, p *agentProc, pki *tlsPKI) *api.Client {
	t.Helper()
	c, err := api.NewClient(&api.Config{Address: p.httpsAddr(), TLSConfig: &api.TLSConfig{
		CACert: pki.ca(), ClientCert: pki.cert("cli"), ClientKey: pki.key("cli"),
	}})
	require.NoError(t, err)
	return c
}

// droverTLS runs the CLI against addr with the TLS environment variables.
func droverTLS(t testing.TB, addr string, pki *tlsPKI, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(droverBin, args...)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+addr, "NOMAD_CACERT="+pki.ca(),
		"NOMAD_CLIENT_CERT="+pki.cert("cli"), "NOMAD_CLIENT_KEY="+pki.key("cli"))
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err)
	return 0, string(out)
}

var netDialer = net.Dialer{Timeout: 3 * time.Second}

// handshakeRefused dials addr with TLS, presenting pair and trusting
// roots, sends prefix (the rpc port's protocol byte, inside TLS) and an
// HTTP request, and reports whether the peer refused: the handshake or the
// first read fails.
func handshakeRefused(t testing.TB, addr string, roots *x509.CertPool, pair tls.Certificate, prefix string) bool {
	t.Helper()
	conn, err := tls.DialWithDialer(&netDialer, "tcp", addr, &tls.Config{
		RootCAs: roots, ServerName: "server.global.nomad", Certificates: []tls.Certificate{pair},
	})
	if err != nil {
		return true
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	// TLS 1.3: a refused client certificate shows on the first read.
	if _, err := io.WriteString(conn, prefix+"GET /v1/status/leader HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return true
	}
	_, err = conn.Read(make([]byte, 1))
	return err != nil
}

func TestTLSCluster(t *testing.T) {
	start := time.Now()
	pki := newTLSPKI(t, "server", "client", "cli")
	foreign := newTLSPKI(t, "server", "cli")

	// Three servers with every TLS check on.
	httpPorts := []int{freePort(t), freePort(t), freePort(t)}
	rpcPorts := []int{freePort(t), freePort(t), freePort(t)}
	var joins, httpAddrs []string
	for i := range 3 {
		joins = append(joins, fmt.Sprintf("%q", fmt.Sprintf("127.0.0.1:%d", rpcPorts[i])))
		httpAddrs = append(httpAddrs, fmt.Sprintf("%q", fmt.Sprintf("127.0.0.1:%d", httpPorts[i])))
	}
	serverBody := fmt.Sprintf(`server {
  enabled          = true
  bootstrap_expect = 3
  min_heartbeat_ttl = "2s"
  heartbeat_grace   = "2s"
  server_join {
    retry_join = [%s]
  }
}
`, strings.Join(joins, ", ")) + tlsBlock(pki, pki, "server")
	var servers []*agentProc
	for i := range 3 {
		servers = append(servers, startTLSAgent(t, fmt.Sprintf("server-%d", i+1), serverBody, httpPorts[i], rpcPorts[i]))
	}
	c := tlsClient(t, servers[0], pki)
	var leader string
	require.Eventually(t, func() bool {
		leader = ""
		for _, s := range servers {
			l, err := tlsClient(t, s, pki).Status().Leader()
			if err != nil || l == "" || (leader != "" && l != leader) {
				return false
			}
			leader = l
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "the TLS servers never agreed on a leader")
	peers, err := c.Status().Peers()
	require.NoError(t, err)
	require.Len(t, peers, 3)
	t.Logf("leader elected over mutual TLS after %s", time.Since(start).Round(time.Millisecond))

	// Two clients, registering over HTTPS with their client certificate.
	clientBody := fmt.Sprintf(`client {
  enabled = true
  servers = [%s]
}
plugin "raw_exec" {
  config {
    enabled = true
  }
}
`, strings.Join(httpAddrs, ", ")) + tlsBlock(pki, pki, "client")
	clients := []*agentProc{
		startTLSAgent(t, "client-1", clientBody, freePort(t), freePort(t)),
		startTLSAgent(t, "client-2", clientBody, freePort(t), freePort(t)),
	}
	waitReadyNodes(t, c, 2)

	// A system job through a deployment, driven by the CLI over HTTPS with
	// NOMAD_CACERT / NOMAD_CLIENT_CERT / NOMAD_CLIENT_KEY.
	jobFile := writeJobFile(t, deployJobHCL)
	addr := servers[1].httpsAddr() // a follower or the leader: both work
	code, out := droverTLS(t, addr, pki, "job", "run", "-var", "version=0", jobFile)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Deployment completed successfully")
	waitDeployment(t, c, 0, "successful")

	code, out = droverTLS(t, addr, pki, "job", "run", "-detach", "-var", "version=1", "-var", "canary=50", jobFile)
	require.Equal(t, 0, code, out)
	var d *api.Deployment
	require.Eventually(t, func() bool {
		d = latestDeployment(t, c)
		return d != nil && d.JobVersion == 1 && d.TaskGroups["web"].HealthyAllocs == 1
	}, 60*time.Second, 200*time.Millisecond, "the canary never turned healthy")
	require.Equal(t, 1, d.TaskGroups["web"].DesiredCanaries)
	require.Equal(t, map[uint64]int{0: 1, 1: 1}, liveVersions(t, c))
	code, out = droverTLS(t, addr, pki, "deployment", "promote", d.ID)
	require.Equal(t, 0, code, out)
	waitDeployment(t, c, 1, "successful")
	require.Equal(t, map[uint64]int{1: 2}, liveVersions(t, c))
	t.Logf("deployment story done after %s", time.Since(start).Round(time.Millisecond))

	// A client agent's API proxies to a server over HTTPS, and a server
	// proxies /v1/client/ to the node's agent over HTTPS.
	viaClient, _, err := tlsClient(t, clients[0], pki).Jobs().List(nil)
	require.NoError(t, err)
	require.Len(t, viaClient, 1)
	allocs, _, err := c.Jobs().Allocations("web", false, nil)
	require.NoError(t, err)
	require.NotEmpty(t, allocs)
	stats, err := c.Allocations().Stats(&api.Allocation{ID: allocs[0].ID, NodeID: allocs[0].NodeID}, nil)
	require.NoError(t, err, "the servers reach the node's HTTPS API")
	require.NotNil(t, stats)

	// Without the TLS environment the CLI gets nowhere.
	code, out = drover(t, addr, "job", "status", "web")
	require.Equal(t, 1, code, out)

	// Plain HTTP to a TLS server or client agent gets no API answer.
	for _, p := range []*agentProc{servers[0], clients[0]} {
		resp, err := http.Get(p.httpAddr() + "/v1/jobs")
		if err != nil {
			continue // refused outright: no answer
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", p.name, body)
		require.Contains(t, string(body), "Client sent an HTTP request to an HTTPS server")
		require.NotContains(t, string(body), "web", "no API data over plain HTTP")
		require.Empty(t, resp.Header.Get("X-Nomad-Index"))
	}

	// A certificate from another CA is refused by the API and by the rpc
	// port (the dialer trusts our CA, so the refusal is the agent's).
	roots := x509.NewCertPool()
	caPEM, err := os.ReadFile(pki.ca())
	require.NoError(t, err)
	roots.AppendCertsFromPEM(caPEM)
	foreignCLI, err := tls.LoadX509KeyPair(foreign.cert("cli"), foreign.key("cli"))
	require.NoError(t, err)
	foreignServer, err := tls.LoadX509KeyPair(foreign.cert("server"), foreign.key("server"))
	require.NoError(t, err)
	ownCLI, err := tls.LoadX509KeyPair(pki.cert("cli"), pki.key("cli"))
	require.NoError(t, err)
	ownClient, err := tls.LoadX509KeyPair(pki.cert("client"), pki.key("client"))
	require.NoError(t, err)
	ownServer, err := tls.LoadX509KeyPair(pki.cert("server"), pki.key("server"))
	require.NoError(t, err)
	const rpcHTTP = "\x02" // the rpc port's HTTP protocol byte
	require.True(t, handshakeRefused(t, servers[0].httpHostPort(), roots, foreignCLI, ""), "API accepted another CA's certificate")
	require.False(t, handshakeRefused(t, servers[0].httpHostPort(), roots, ownCLI, ""), "control: our CLI certificate is accepted by the API")
	require.True(t, handshakeRefused(t, servers[0].rpcAddr(), roots, foreignServer, rpcHTTP), "rpc port accepted another CA's certificate")
	require.True(t, handshakeRefused(t, servers[0].rpcAddr(), roots, ownClient, rpcHTTP), "rpc port accepted a client certificate")
	require.False(t, handshakeRefused(t, servers[0].rpcAddr(), roots, ownServer, rpcHTTP), "control: a server certificate is accepted by the rpc port")

	// A "server" holding a client certificate never joins raft.
	rogueBody := fmt.Sprintf(`server {
  enabled          = true
  bootstrap_expect = 0
  server_join {
    retry_join = [%s]
  }
}
`, strings.Join(joins, ", ")) + tlsBlock(pki, pki, "client")
	rogue := startTLSAgent(t, "rogue", rogueBody, freePort(t), freePort(t))
	// It is up (its own API answers), yet after 5s of join attempts the
	// cluster still has exactly the three servers.
	require.Eventually(t, func() bool {
		_, err := tlsClient(t, rogue, pki).Agent().Self()
		return err == nil
	}, 15*time.Second, 100*time.Millisecond, "the rogue agent did not start:\n%s", rogue.logs())
	time.Sleep(5 * time.Second)
	for _, s := range servers {
		peers, err := tlsClient(t, s, pki).Status().Peers()
		require.NoError(t, err)
		require.Len(t, peers, 3, "%s peers: %v", s.name, peers)
		require.NotContains(t, peers, rogue.rpcAddr())
	}
	var cfgResp struct {
		Servers []struct{ Node, Address string }
	}
	_, err = c.Raw().Query("/v1/operator/raft/configuration", &cfgResp, nil)
	require.NoError(t, err)
	require.Len(t, cfgResp.Servers, 3)
	for _, s := range cfgResp.Servers {
		require.NotEqual(t, "rogue", s.Node)
	}
	// It did try: its discovery requests died in the TLS handshake.
	var tried []string
	for _, line := range strings.Split(rogue.logs(), "\n") {
		if strings.Contains(line, "discovery failed") && strings.Contains(line, "tls") {
			tried = append(tried, line)
		}
	}
	require.NotEmpty(t, tried, "the rogue never attempted to join:\n%s", rogue.logs())
	t.Logf("rogue join attempts refused: %d, e.g. %s", len(tried), tried[0])

	// SIGHUP reloads the certificate: server-1 gets a new one (same name,
	// new serial); new connections see it and the API keeps working.
	serial := func() string {
		conn, err := tls.Dial("tcp", servers[0].httpHostPort(), &tls.Config{
			RootCAs: roots, ServerName: "server.global.nomad", Certificates: []tls.Certificate{ownCLI},
		})
		require.NoError(t, err)
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := serial()
	fresh := &tlsPKI{dir: t.TempDir()}
	for _, f := range []string{"nomad-agent-ca.pem", "nomad-agent-ca-key.pem"} {
		b, err := os.ReadFile(pki.path(f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(fresh.path(f), b, 0o600))
	}
	fresh.run(t, "tls", "cert", "create", "-server")
	for _, role := range []string{"server"} {
		for _, pair := range [][2]string{{fresh.cert(role), pki.cert(role)}, {fresh.key(role), pki.key(role)}} {
			b, err := os.ReadFile(pair[0])
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(pair[1], b, 0o600))
		}
	}
	require.Equal(t, before, serial(), "no change before the signal")
	require.NoError(t, servers[0].cmd.Process.Signal(syscall.SIGHUP))
	require.Eventually(t, func() bool { return serial() != before }, 10*time.Second, 100*time.Millisecond,
		"server-1 kept its old certificate after SIGHUP:\n%s", servers[0].logs())
	code, out = droverTLS(t, servers[0].httpsAddr(), pki, "job", "status", "web")
	require.Equal(t, 0, code, out)
	require.Contains(t, servers[0].logs(), "reloaded TLS certificate and key")
	t.Logf("TLS e2e done in %s", time.Since(start).Round(time.Millisecond))
}
