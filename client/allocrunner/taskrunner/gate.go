package taskrunner

import "sync"

// Gate holds a task's starts until it opens. The alloc runner opens it when
// the task's lifecycle phase comes (package lifecycle: a main task waits
// for its prestart tasks) and may close it again (an operator's restart of
// the allocation starts over at prestart). A task already running is not
// affected; only its next start waits. Safe for concurrent use.
type Gate struct {
	mu   sync.Mutex
	open bool
	ch   chan struct{} // closed while open
}

// NewGate returns a closed gate.
func NewGate() *Gate { return &Gate{ch: make(chan struct{})} }

// Open lets the task start; idempotent.
func (g *Gate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open {
		g.open = true
		close(g.ch)
	}
}

// Close makes the next start wait for Open again; idempotent.
func (g *Gate) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		g.open = false
		g.ch = make(chan struct{})
	}
}

// IsOpen reports whether a start would go ahead now.
func (g *Gate) IsOpen() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open
}

// opened returns a channel that is closed once the gate is open.
func (g *Gate) opened() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ch
}
