package agent

import (
	"net"
	"sync"
)

// returningListener is the plain-HTTP listener of an agent with a way
// back in: a connection taken from net/http for a parked poll
// (parked_poll.go) is handed back through give once its answer is
// written, and Accept returns it to the HTTP server as if it were new, so
// the client's next request on it is served as usual.
//
// One goroutine accepts from the inner listener until it is closed; Close
// closes it and makes later gives close their connection instead.
type returningListener struct {
	inner    net.Listener
	accepted chan acceptResult
	returned chan net.Conn
	done     chan struct{}
	close    sync.Once
	stopped  chan struct{} // closed when the accepting goroutine has ended
}

type acceptResult struct {
	conn net.Conn
	err  error
}

func newReturningListener(inner net.Listener) *returningListener {
	l := &returningListener{inner: inner, accepted: make(chan acceptResult), returned: make(chan net.Conn),
		done: make(chan struct{}), stopped: make(chan struct{})}
	go l.acceptLoop()
	return l
}

// acceptLoop hands the inner listener's connections and errors to Accept
// until the listener is closed.
func (l *returningListener) acceptLoop() {
	defer close(l.stopped)
	for {
		c, err := l.inner.Accept()
		select {
		case l.accepted <- acceptResult{c, err}:
		case <-l.done:
			if c != nil {
				_ = c.Close()
			}
			return
		}
	}
}

// Accept returns the next new or handed-back connection.
func (l *returningListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.returned:
		return c, nil
	case r := <-l.accepted:
		return r.conn, r.err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// give hands c back to the HTTP server; after Close it closes c.
func (l *returningListener) give(c net.Conn) {
	select {
	case l.returned <- c:
	case <-l.done:
		_ = c.Close()
	}
}

// Close closes the inner listener and waits for the accepting goroutine.
func (l *returningListener) Close() error {
	var err error
	l.close.Do(func() {
		close(l.done)
		err = l.inner.Close()
		<-l.stopped
	})
	return err
}

// Addr is the inner listener's address.
func (l *returningListener) Addr() net.Addr { return l.inner.Addr() }
