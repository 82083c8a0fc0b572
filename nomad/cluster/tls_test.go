package cluster

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/helper/tlsutil"
)

// testPKI issues role certificates from one CA for rpc TLS tests.
type testPKI struct {
	dir string
	ca  tlsutil.KeyPair
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	ca, err := tlsutil.GenerateCA(tlsutil.CAOptions{}, time.Now())
	require.NoError(t, err)
	p := &testPKI{dir: t.TempDir(), ca: ca}
	require.NoError(t, os.WriteFile(filepath.Join(p.dir, "ca.pem"), ca.CertPEM, 0o600))
	return p
}

// rpcTLS returns the cluster TLS of an agent holding a certificate of role
// (verify_server_hostname on).
func (p *testPKI) rpcTLS(t *testing.T, role tlsutil.Role, name string, upgrade bool) *TLS {
	t.Helper()
	kp, err := tlsutil.GenerateCert(p.ca, tlsutil.CertOptions{Role: role}, time.Now())
	require.NoError(t, err)
	cert, key := filepath.Join(p.dir, name+".pem"), filepath.Join(p.dir, name+"-key.pem")
	require.NoError(t, os.WriteFile(cert, kp.CertPEM, 0o600))
	require.NoError(t, os.WriteFile(key, kp.KeyPEM, 0o600))
	a, err := tlsutil.NewAgent(tlsutil.Config{
		RPC: true, CAFile: filepath.Join(p.dir, "ca.pem"), CertFile: cert, KeyFile: key,
		VerifyServerHostname: true, Region: "global",
	})
	require.NoError(t, err)
	return &TLS{Server: a.RPCServerConfig(), Client: a.RPCClientConfig(), UpgradeMode: upgrade}
}

func startThreeTLS(t *testing.T, p *testPKI) []*testNode {
	t.Helper()
	lns, addrs := listeners(t, 3)
	nodes := make([]*testNode, 3)
	for i := range nodes {
		id := "s" + strconv.Itoa(i+1)
		nodes[i] = startNode(t, id, nodeOpts{
			listener: lns[i], expect: 3, join: addrs, tls: p.rpcTLS(t, tlsutil.RoleServer, id, false),
		})
	}
	waitLeader(t, nodes)
	return nodes
}

// Raft, join (bootstrap discovery) and forwarding all run over mutual TLS.
func TestTLS_ThreeServersFormReplicateAndForward(t *testing.T) {
	p := newTestPKI(t)
	nodes := startThreeTLS(t, p)
	leader := waitLeader(t, nodes)
	f := followers(nodes, leader)[0]

	req, err := http.NewRequest(http.MethodPut, f.api.URL+"/v1/apply", strings.NewReader("via-follower"))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.True(t, strings.HasPrefix(string(body), leader.id+" "), "answered by the leader: %s", body)
	waitFSMs(t, nodes, []string{"via-follower"})

	// A late server with a server certificate joins over TLS.
	late := startNode(t, "s4", nodeOpts{expect: 0, join: []string{f.c.AdvertiseAddr()},
		tls: p.rpcTLS(t, tlsutil.RoleServer, "s4", false)})
	all := append(nodes, late)
	require.Eventually(t, func() bool {
		l := currentLeader(all)
		return l != nil && strings.Join(voters(l.c), ",") == "s1,s2,s3,s4"
	}, testWait, testTick)
	waitFSMs(t, all, []string{"via-follower"})
}

// An agent holding a client certificate, or a server certificate of
// another CA, never joins raft: the servers refuse its handshakes.
func TestTLS_WrongCertificatesNeverJoin(t *testing.T) {
	p := newTestPKI(t)
	nodes := startThreeTLS(t, p)
	addrs := []string{nodes[0].c.AdvertiseAddr(), nodes[1].c.AdvertiseAddr(), nodes[2].c.AdvertiseAddr()}

	rogue := startNode(t, "rogue-client", nodeOpts{expect: 0, join: addrs,
		tls: p.rpcTLS(t, tlsutil.RoleClient, "rogue-client", false)})
	foreign := startNode(t, "foreign", nodeOpts{expect: 0, join: addrs,
		tls: newTestPKI(t).rpcTLS(t, tlsutil.RoleServer, "foreign", false)})
	plain := startNode(t, "plain", nodeOpts{expect: 0, join: addrs})

	// 30 join attempts each.
	time.Sleep(30 * testRetryInterval)
	leader := waitLeader(t, nodes)
	require.Equal(t, "s1,s2,s3", strings.Join(voters(leader.c), ","))
	for _, n := range []*testNode{rogue, foreign, plain} {
		id, _ := n.c.Leader()
		require.Empty(t, id, "%s learned of a leader", n.id)
		require.Len(t, n.c.Peers(), 0, "%s is in no configuration", n.id)
	}
}

// rawRPC dials addr in plaintext, sends the HTTP protocol byte and a
// request for the self endpoint, and returns the status line (empty when
// the connection is closed without an answer).
func rawRPC(t *testing.T, addr string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	require.NoError(t, err)
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	_, err = fmt.Fprintf(conn, "%cGET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", protoHTTP, selfPath)
	require.NoError(t, err)
	line, _ := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line)
}

func TestTLS_PlaintextRefusedUnlessUpgradeMode(t *testing.T) {
	p := newTestPKI(t)
	strict := startNode(t, "strict", nodeOpts{expect: 1, tls: p.rpcTLS(t, tlsutil.RoleServer, "strict", false)})
	require.Empty(t, rawRPC(t, strict.c.Addr()), "no answer to plaintext")

	upgrade := startNode(t, "upgrade", nodeOpts{expect: 1, tls: p.rpcTLS(t, tlsutil.RoleServer, "upgrade", true)})
	require.Equal(t, "HTTP/1.1 200 OK", rawRPC(t, upgrade.c.Addr()), "upgrade mode still answers plaintext")

	// Sanity: without TLS the same request is answered, so the empty
	// answer above is the TLS requirement.
	plain := startNode(t, "plain", nodeOpts{expect: 1})
	require.Equal(t, "HTTP/1.1 200 OK", rawRPC(t, plain.c.Addr()))
}
