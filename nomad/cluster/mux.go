package cluster

import (
	"context"
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
}

var _ raft.StreamLayer = (*streamLayer)(nil)

// Dial opens a raft connection to a peer's rpc port.
func (s *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return dialProto(ctx, string(addr), protoRaft)
}

// dialProto connects to a peer's rpc port and writes the protocol byte.
func dialProto(ctx context.Context, addr string, proto byte) (net.Conn, error) {
	d := net.Dialer{Timeout: peerDialTimeout, KeepAlive: 30 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(handshakeTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetWriteDeadline(deadline)
	if _, err := conn.Write([]byte{proto}); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("cluster: protocol handshake with %s: %w", addr, err)
	}
	_ = conn.SetWriteDeadline(time.Time{})
	return conn, nil
}

// mux accepts rpc connections and routes them by their first byte.
type mux struct {
	ln     net.Listener
	raft   *chanListener
	http   *chanListener
	logger hclog.Logger
	wg     sync.WaitGroup
}

func newMux(ln net.Listener, adv net.Addr, logger hclog.Logger) *mux {
	return &mux{
		ln:     ln,
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
func (m *mux) route(conn net.Conn) {
	_ = conn.SetReadDeadline(time.Now().Add(handshakeTimeout))
	var b [1]byte
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		m.logger.Debug("rpc conn closed before protocol byte", "remote", conn.RemoteAddr(), "error", err)
		_ = conn.Close()
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	switch b[0] {
	case protoRaft:
		m.raft.deliver(conn)
	case protoHTTP:
		m.http.deliver(conn)
	default:
		m.logger.Warn("unknown rpc protocol byte, closing", "remote", conn.RemoteAddr(), "byte", b[0])
		_ = conn.Close()
	}
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
// port with the HTTP protocol byte. No proxies, no transparent compression
// (forwarded bodies pass through untouched), redirects are not followed.
func newPeerClient() *http.Client {
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return dialProto(ctx, addr, protoHTTP)
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
