package nomad

import (
	"context"
	"errors"
	"time"
)

// consistentReadWait bounds how long a default read waits for a new leader
// to finish applying the log it inherited.
const consistentReadWait = 10 * time.Second

// consistentReadPoll is how often that wait re-checks.
const consistentReadPoll = 5 * time.Millisecond

// ErrNotReadyForReads is returned by WaitConsistentRead when this server is
// not (or no longer) a leader that has applied every committed entry.
var ErrNotReadyForReads = errors.New("No cluster leader")

// ReadyForConsistentReads reports whether this server leads and has applied
// every entry committed before its term (its leadership barrier passed), so
// that its state store holds every acknowledged write.
func (s *Server) ReadyForConsistentReads() bool {
	term := s.readsReadyTerm.Load()
	return term != 0 && s.IsLeader() && s.cluster.Raft().CurrentTerm() == term
}

// WaitConsistentRead blocks until ReadyForConsistentReads, ctx ends, or
// consistentReadWait passes (then ErrNotReadyForReads). Call it on the
// server a default read was routed to (the leader, after forwarding).
func (s *Server) WaitConsistentRead(ctx context.Context) error {
	if s.ReadyForConsistentReads() {
		return nil
	}
	deadline := time.NewTimer(consistentReadWait)
	defer deadline.Stop()
	tick := time.NewTicker(consistentReadPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return ErrNotReadyForReads
		case <-tick.C:
			if s.ReadyForConsistentReads() {
				return nil
			}
			if !s.IsLeader() {
				return ErrNotReadyForReads
			}
		}
	}
}
