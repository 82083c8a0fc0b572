package client

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/wire"
)

// serviceSync holds, per allocation, what it should advertise in the
// native catalog and what the servers last acknowledged, until they agree.
// Safe for concurrent use.
type serviceSync struct {
	mu   sync.Mutex
	want map[string][]*api.ServiceRegistration // by alloc ID; guarded by mu
	sent map[string][]*api.ServiceRegistration // acknowledged; guarded by mu
	// kick has room for one token: there is something to send.
	kick chan struct{}
}

func newServiceSync() *serviceSync {
	return &serviceSync{
		want: map[string][]*api.ServiceRegistration{},
		sent: map[string][]*api.ServiceRegistration{},
		kick: make(chan struct{}, 1),
	}
}

// set records what allocID advertises now and wakes the loop if the
// servers do not have it yet. An allocation is tracked from its first
// report on when its group defines services (even while it advertises
// none: a restarted client so clears what the servers kept of it), and
// from its first registration otherwise (a job update may remove them).
func (s *serviceSync) set(allocID string, regs []*api.ServiceRegistration, defines bool) {
	s.mu.Lock()
	_, known := s.want[allocID]
	if !known && !defines && len(regs) == 0 {
		s.mu.Unlock()
		return
	}
	s.want[allocID] = regs
	sent, acked := s.sent[allocID]
	differs := !acked || !sameRegistrations(regs, sent)
	s.mu.Unlock()
	if differs {
		s.wake()
	}
}

// resync forgets what the servers acknowledged, so that everything is
// sent again: they may have lost it (the node was marked down, an operator
// deleted a registration).
func (s *serviceSync) resync() {
	s.mu.Lock()
	s.sent = map[string][]*api.ServiceRegistration{}
	n := len(s.want)
	s.mu.Unlock()
	if n > 0 {
		s.wake()
	}
}

// forget drops allocID (the servers collected it, and its registrations
// with it): an allocation is tracked until then.
func (s *serviceSync) forget(allocID string) {
	s.mu.Lock()
	delete(s.want, allocID)
	delete(s.sent, allocID)
	s.mu.Unlock()
}

func (s *serviceSync) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// pending returns the allocations whose registrations the servers do not
// have, sorted by alloc ID.
func (s *serviceSync) pending() []*wire.AllocServices {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*wire.AllocServices
	for id, regs := range s.want {
		if sent, acked := s.sent[id]; !acked || !sameRegistrations(regs, sent) {
			out = append(out, &wire.AllocServices{AllocID: id, Services: regs})
		}
	}
	slices.SortFunc(out, func(x, y *wire.AllocServices) int { return strings.Compare(x.AllocID, y.AllocID) })
	return out
}

// acked records that the servers hold batch.
func (s *serviceSync) acked(batch []*wire.AllocServices) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, as := range batch {
		if _, tracked := s.want[as.AllocID]; tracked {
			s.sent[as.AllocID] = as.Services
		}
	}
}

// serviceResync is how often the client sends every registration again,
// whatever the servers acknowledged (unchanged ones write nothing there).
const serviceResync = time.Minute

// serviceLoop sends the pending registrations when kicked, retrying with
// backoff until ctx ends, and everything every serviceResync. A batch the
// servers refuse (an allocation they collected meanwhile) is sent again
// without the allocations the client no longer tracks.
func (c *Client) serviceLoop(ctx context.Context) {
	failures := 0
	resync := time.NewTicker(serviceResync)
	defer resync.Stop()
	for {
		if failures == 0 {
			select {
			case <-ctx.Done():
				return
			case <-c.services.kick:
			case <-resync.C:
				c.services.resync()
			}
		} else if !sleepCtx(ctx, backoff(c.cfg.timing.retry, c.cfg.timing.maxRetry, failures)) {
			return
		}
		batch := c.services.pending()
		if len(batch) == 0 {
			failures = 0
			continue
		}
		if err := c.rpc.syncServices(ctx, c.NodeID(), batch); err != nil {
			for _, as := range batch {
				if !c.tracks(as.AllocID) {
					c.services.forget(as.AllocID)
				}
			}
			failures++
			c.logger.Warn("failed to send service registrations; will retry", "error", err, "failures", failures)
			continue
		}
		c.services.acked(batch)
		failures = 0
	}
}

// syncServices sends the registrations of the allocations of batch.
func (s *serverConn) syncServices(ctx context.Context, nodeID string, batch []*wire.AllocServices) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := s.call(ctx, http.MethodPut, wire.NodePath(wire.RouteNodeServices, nodeID), nil, &wire.NodeServicesRequest{Allocs: batch}, &api.WriteMeta{})
	return err
}
