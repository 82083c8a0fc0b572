package nomad

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// Heartbeat defaults, as Nomad has them.
const (
	defaultMinHeartbeatTTL = 10 * time.Second
	defaultHeartbeatGrace  = 10 * time.Second
	// defaultMaxHeartbeatsPerSecond bounds the heartbeat load: the TTL
	// grows with the number of nodes so that all of them together send
	// at most this many heartbeats a second (max_heartbeats_per_second).
	defaultMaxHeartbeatsPerSecond = 50.0
)

// heartbeatTTL is the TTL given to a client when nodes are registered:
// max(minTTL, nodes / perSecond), plus a random jitter of up to the same
// again (jitter in [0,1)) so that heartbeats spread out instead of
// arriving in step.
func heartbeatTTL(minTTL time.Duration, perSecond float64, nodes int, jitter float64) time.Duration {
	scaled := time.Duration(float64(nodes) / perSecond * float64(time.Second))
	base := max(minTTL, scaled)
	return base + time.Duration(float64(base)*jitter)
}

// heartbeats tracks, on the leader, when each client must heartbeat next.
// A client that misses its deadline is marked down (its allocations are then
// lost through the evaluation that the status change creates), or
// disconnected first when its allocations have a lost_after window.
type heartbeats struct {
	mu     sync.Mutex
	timers map[string]*time.Timer // by node ID; guarded by mu; nil when not leading
}

// reset (re)arms nodeID's deadline to fire expire after d. It does nothing
// when this server is not leading.
func (h *heartbeats) reset(nodeID string, d time.Duration, expire func(nodeID string)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.timers == nil {
		return
	}
	if t, ok := h.timers[nodeID]; ok {
		t.Stop()
	}
	h.timers[nodeID] = time.AfterFunc(d, func() { expire(nodeID) })
}

// count is the number of nodes with a deadline (0 when not leading).
func (h *heartbeats) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.timers)
}

// forget drops nodeID's deadline.
func (h *heartbeats) forget(nodeID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.timers[nodeID]; ok {
		t.Stop()
		delete(h.timers, nodeID)
	}
}

// start begins tracking (on gaining leadership).
func (h *heartbeats) start() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.timers = map[string]*time.Timer{}
}

// stop ends tracking (on losing leadership).
func (h *heartbeats) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.timers {
		t.Stop()
	}
	h.timers = nil
}

// minHeartbeatTTL and heartbeatGrace apply the defaults.
func (s *Server) minHeartbeatTTL() time.Duration {
	if s.config.MinHeartbeatTTL > 0 {
		return s.config.MinHeartbeatTTL
	}
	return defaultMinHeartbeatTTL
}

func (s *Server) heartbeatGrace() time.Duration {
	if s.config.HeartbeatGrace > 0 {
		return s.config.HeartbeatGrace
	}
	return defaultHeartbeatGrace
}

func (s *Server) maxHeartbeatsPerSecond() float64 {
	if s.config.MaxHeartbeatsPerSecond > 0 {
		return s.config.MaxHeartbeatsPerSecond
	}
	return defaultMaxHeartbeatsPerSecond
}

// currentHeartbeatTTL is the TTL to hand to a client now: it scales with
// the number of nodes the leader tracks, with jitter.
func (s *Server) currentHeartbeatTTL() time.Duration {
	return heartbeatTTL(s.minHeartbeatTTL(), s.maxHeartbeatsPerSecond(), s.heartbeats.count(), rand.Float64())
}

// initializeHeartbeats arms a deadline for every node that is not down, on
// gaining leadership. Clients get twice the usual allowance first, so that a
// leader election does not mark nodes down en masse.
func (s *Server) initializeHeartbeats() {
	s.heartbeats.start()
	nodes, err := s.State().Nodes(nil)
	if err != nil {
		s.logger.Error("failed to list nodes for heartbeats", "error", err)
		return
	}
	allowance := 2 * (heartbeatTTL(s.minHeartbeatTTL(), s.maxHeartbeatsPerSecond(), len(nodes), 1) + s.heartbeatGrace())
	now := s.now()
	for _, n := range nodes {
		switch n.Status {
		case structs.NodeStatusDown:
		case structs.NodeStatusDisconnected:
			// The rest of its window, as the former leader armed it.
			allocs, err := s.State().AllocsByNode(nil, n.ID)
			if err != nil {
				s.logger.Error("failed to list the allocations of a disconnected node", "node_id", n.ID, "error", err)
			}
			left := time.Unix(n.StatusUpdatedAt, 0).Add(disconnectWindow(allocs)).Sub(now)
			s.heartbeats.reset(n.ID, max(left, allowance), s.heartbeatExpired)
		default:
			s.heartbeats.reset(n.ID, allowance, s.heartbeatExpired)
		}
	}
}

// resetHeartbeat records a heartbeat of nodeID and returns the TTL the client
// must heartbeat within.
func (s *Server) resetHeartbeat(nodeID string) time.Duration {
	ttl := s.currentHeartbeatTTL()
	s.heartbeats.reset(nodeID, ttl+s.heartbeatGrace(), s.heartbeatExpired)
	return ttl
}

// heartbeatExpired handles a node that missed its heartbeat: a node
// running allocations with a lost_after window becomes disconnected (its
// allocations are then unknown through the evaluations the change
// creates) and down once the longest window ends; any other node is down
// at once (its allocations are lost).
func (s *Server) heartbeatExpired(nodeID string) {
	if !s.IsLeader() {
		return
	}
	s.heartbeats.forget(nodeID)
	node, err := s.State().NodeByID(nil, nodeID)
	if err != nil || node == nil {
		return
	}
	if node.Status != structs.NodeStatusDisconnected {
		allocs, err := s.State().AllocsByNode(nil, nodeID)
		if err != nil {
			s.logger.Error("failed to list the allocations of a node that missed its heartbeat", "node_id", nodeID, "error", err)
		}
		if window := disconnectWindow(allocs); window > 0 {
			s.logger.Warn("node missed its heartbeat; marking it disconnected", "node_id", nodeID, "lost_after", window)
			if _, err := s.updateNodeStatus(nodeID, structs.NodeStatusDisconnected, "Node heartbeat missed; disconnected"); err != nil {
				s.logger.Error("failed to mark node disconnected", "node_id", nodeID, "error", err)
				return
			}
			s.heartbeats.reset(nodeID, window, s.heartbeatExpired)
			return
		}
	}
	s.logger.Warn("node missed its heartbeat; marking it down", "node_id", nodeID)
	if _, err := s.updateNodeStatus(nodeID, structs.NodeStatusDown, "Node heartbeat missed"); err != nil {
		s.logger.Error("failed to mark node down", "node_id", nodeID, "error", err)
	}
}

// disconnectWindow is how long a node running allocs stays disconnected
// after missing its heartbeat before it is down: the longest lost_after of
// the groups of its live allocations, 0 when none has one (the node is
// down at once).
func disconnectWindow(allocs []*structs.Allocation) time.Duration {
	var window time.Duration
	for _, a := range allocs {
		if a.Terminal() || a.Job == nil {
			continue
		}
		window = max(window, a.Job.LookupTaskGroup(a.TaskGroup).LostAfter())
	}
	return window
}
