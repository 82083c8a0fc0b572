package cluster

import (
	"github.com/hashicorp/raft"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func mustTCPAddr(t *testing.T, s string) *net.TCPAddr {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp", s)
	require.NoError(t, err)
	return a
}

func TestMux_RoutesByFirstByte(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	m := newMux(ln, advertised(ln.Addr().String()), nil, testLogger("mux"))
	m.start()
	defer m.close()
	sl := &streamLayer{chanListener: m.raft, dialer: &dialer{}}
	require.Equal(t, ln.Addr().String(), sl.Addr().String())

	// Raft: Dial writes 0x01, the conn surfaces on the stream layer.
	out, err := sl.Dial(advertisedAddr(ln), time.Second)
	require.NoError(t, err)
	defer out.Close()
	in, err := sl.Accept()
	require.NoError(t, err)
	defer in.Close()
	_, err = out.Write([]byte("ping"))
	require.NoError(t, err)
	buf := make([]byte, 4)
	_, err = io.ReadFull(in, buf)
	require.NoError(t, err)
	require.Equal(t, "ping", string(buf), "protocol byte is consumed by the mux")

	// HTTP byte goes to the HTTP listener.
	hc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer hc.Close()
	_, err = hc.Write([]byte{protoHTTP})
	require.NoError(t, err)
	hin, err := m.http.Accept()
	require.NoError(t, err)
	hin.Close()

	// Unknown byte: closed by the mux.
	bad, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer bad.Close()
	_, err = bad.Write([]byte{0x7f})
	require.NoError(t, err)
	require.NoError(t, bad.SetReadDeadline(time.Now().Add(2*time.Second)))
	_, err = bad.Read(buf)
	require.ErrorIs(t, err, io.EOF)

	// Closing: Accept returns net.ErrClosed.
	require.NoError(t, m.close())
	_, err = sl.Accept()
	require.ErrorIs(t, err, net.ErrClosed)
}

func advertisedAddr(ln net.Listener) raft.ServerAddress {
	return raft.ServerAddress(ln.Addr().String())
}
