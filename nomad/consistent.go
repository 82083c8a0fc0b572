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
// consistentReadWait passes (then ErrNotReadyForReads), and then confirms
// with a quorum that this server still leads (ErrNotReadyForReads if not):
// a leader resumed from a pause, or cut off from its majority, still
// believes it leads until its lease check runs, and its state may miss
// writes a new leader has acknowledged. Call it on the server a default
// read was routed to (the leader, after forwarding).
func (s *Server) WaitConsistentRead(ctx context.Context) error {
	if err := s.waitReadsReady(ctx); err != nil {
		return err
	}
	verify := s.verifyLeader
	if verify == nil {
		verify = s.cluster.VerifyLeader
	}
	if err := verify(); err != nil {
		return ErrNotReadyForReads
	}
	return nil
}

// waitReadsReady blocks until ReadyForConsistentReads, ctx ends, or
// consistentReadWait passes (then ErrNotReadyForReads).
func (s *Server) waitReadsReady(ctx context.Context) error {
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
