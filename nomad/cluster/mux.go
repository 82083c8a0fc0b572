package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Protocol bytes: the first byte of every connection to the rpc port.
const (
	protoRaft byte = 0x01
	protoHTTP byte = 0x02
)

const (
	// handshakeTimeout bounds how long an inbound conn may take to send its
	// protocol byte, and an outbound dial to write it.
	handshakeTimeout = 10 * time.Second

	// peerDialTimeout bounds TCP connects of the peer HTTP client.
	peerDialTimeout = 5 * time.Second
)

// advertised is a net.Addr reporting the advertised rpc address; raft sends
// the transport's local address to followers as the leader address.
type advertised string

func (a advertised) Network() string { return "tcp" }
func (a advertised) String() string  { return string(a) }

// chanListener is a net.Listener fed by the mux.
type chanListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case <-l.done:
		return nil, net.ErrClosed
	default:
	}
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// deliver hands c to Accept, or closes it when the listener is closed.
func (l *chanListener) deliver(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		_ = c.Close()
	}
}

// streamLayer is the raft.StreamLayer over the mux.
type streamLayer struct {
	*chanListener
	dialer *dialer
}

var _ raft.StreamLayer = (*streamLayer)(nil)

// Dial opens a raft connection to a peer's rpc port.
func (s *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return s.dialer.dial(ctx, string(addr), protoRaft)
}

// dialer opens connections to peers' rpc ports: over TLS when tls is set.
type dialer struct {
	tls *tls.Config // nil: plaintext
}

// dial connects to a peer's rpc port, completes the TLS handshake when
// configured, and writes the protocol byte.
func (d *dialer) dial(ctx context.Context, addr string, proto byte) (net.Conn, error) {
	nd := net.Dialer{Timeout: peerDialTimeout, KeepAlive: 30 * time.Second}
	conn, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(handshakeTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	if d != nil && d.tls != nil {
		tc := tls.Client(conn, d.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("cluster: TLS handshake with %s: %w", addr, err)
		}
		conn = tc
	}
	if _, err := conn.Write([]byte{proto}); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("cluster: protocol handshake with %s: %w", addr, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, nil
}

// TLS is mutual TLS on the rpc port.
type TLS struct {
	// Server verifies inbound peers (it must require client certificates
	// and check their role); Client is used for outbound connections.
	Server, Client *tls.Config
	// UpgradeMode also accepts plaintext inbound connections, for moving a
	// running cluster to TLS. Outbound connections always use TLS.
	UpgradeMode bool
}

// tlsRecordHandshake is the first byte of a TLS ClientHello; it differs
// from every protocol byte, so one port tells TLS from plaintext.
const tlsRecordHandshake byte = 0x16

// mux accepts rpc connections and routes them by their first byte.
type mux struct {
	ln     net.Listener
	tls    *TLS // nil: plaintext only
	raft   *chanListener
	http   *chanListener
	logger hclog.Logger
	wg     sync.WaitGroup
}

func newMux(ln net.Listener, adv net.Addr, tlsCfg *TLS, logger hclog.Logger) *mux {
	return &mux{
		ln:     ln,
		tls:    tlsCfg,
		raft:   newChanListener(adv),
		http:   newChanListener(adv),
		logger: logger,
	}
}

func (m *mux) start() {
	m.wg.Add(1)
	go m.serve()
}

func (m *mux) serve() {
	defer m.wg.Done()
	var delay time.Duration
	for {
		conn, err := m.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient (EMFILE and friends): back off, as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			m.logger.Warn("rpc accept failed", "error", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		go m.route(conn)
	}
}

// route reads the protocol byte and hands conn to the matching listener.
// With TLS on, the connection must open with a TLS handshake (or, in
// upgrade mode, may be plaintext); the protocol byte is then read inside
// TLS. A peer the TLS config refuses never reaches raft or HTTP.
func (m *mux) route(conn net.Conn) {
	_ = conn.SetReadDeadline(time.Now().Add(handshakeTimeout))
	b, err := readByte(conn)
	if err != nil {
		m.logger.Debug("rpc conn closed before protocol byte", "remote", conn.RemoteAddr(), "error", err)
		_ = conn.Close()
		return
	}
	switch {
	case b == tlsRecordHandshake && m.tls != nil:
		tc := tls.Server(&prefixConn{Conn: conn, first: b, pending: true}, m.tls.Server)
		_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
		if err := tc.Handshake(); err != nil {
			m.logger.Warn("rpc TLS handshake refused", "remote", conn.RemoteAddr(), "error", err)
			_ = conn.Close()
			return
		}
		if b, err = readByte(tc); err != nil {
			m.logger.Debug("rpc TLS conn closed before protocol byte", "remote", conn.RemoteAddr(), "error", err)
			_ = tc.Close()
			return
		}
		_ = conn.SetDeadline(time.Time{})
		conn = tc
	case m.tls != nil && !m.tls.UpgradeMode:
		m.logger.Warn("plaintext rpc connection refused: TLS is required", "remote", conn.RemoteAddr())
		_ = conn.Close()
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	switch b {
	case protoRaft:
		m.raft.deliver(conn)
	case protoHTTP:
		m.http.deliver(conn)
	default:
		m.logger.Warn("unknown rpc protocol byte, closing", "remote", conn.RemoteAddr(), "byte", b)
		_ = conn.Close()
	}
}

func readByte(r io.Reader) (byte, error) {
	var b [1]byte
	_, err := io.ReadFull(r, b[:])
	return b[0], err
}

// prefixConn replays one byte already read from Conn.
type prefixConn struct {
	net.Conn
	first   byte
	pending bool
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if c.pending && len(p) > 0 {
		p[0], c.pending = c.first, false
		return 1, nil
	}
	return c.Conn.Read(p)
}

// close stops accepting and closes both listeners.
func (m *mux) close() error {
	err := m.ln.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	m.raft.Close()
	m.http.Close()
	m.wg.Wait()
	return err
}

// newPeerClient returns an HTTP client whose connections go to a peer's rpc
// port with the HTTP protocol byte (inside TLS when d has it). No proxies, no transparent compression
// (forwarded bodies pass through untouched), redirects are not followed.
func newPeerClient(d *dialer) *http.Client {
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return d.dial(ctx, addr, protoHTTP)
		},
		DisableCompression:    true,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
