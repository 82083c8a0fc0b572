package agent

import (
	"sync"
	"time"

	"github.com/drover-project/drover/helper/metrics"
	"github.com/drover-project/drover/nomad"
)

// agentMetrics are the agent's metrics; gauges of state are refreshed when
// /v1/metrics is read.
type agentMetrics struct {
	registry    *metrics.Registry
	requests    *metrics.Counter
	requestTime *metrics.Histogram
	tableIndex  *metrics.Gauge
	raftLeader  *metrics.Gauge
	brokerReady *metrics.Gauge
	brokerUnack *metrics.Gauge
	objects     *metrics.Gauge
	prefetch    *metrics.Counter
	prefetchMu  sync.Mutex // serialises the catch-up of prefetch
}

func newAgentMetrics() *agentMetrics {
	r := metrics.NewRegistry()
	return &agentMetrics{
		registry:    r,
		requests:    r.Counter("drover_http_requests_total", "HTTP API requests served.", "method"),
		requestTime: r.Histogram("drover_http_request_duration_seconds", "HTTP API request latency."),
		tableIndex:  r.Gauge("drover_state_table_index", "Latest raft index applied to each state table.", "table"),
		raftLeader:  r.Gauge("drover_raft_is_leader", "1 when this server is the raft leader."),
		brokerReady: r.Gauge("drover_broker_total_ready", "Evaluations ready to be scheduled."),
		brokerUnack: r.Gauge("drover_broker_total_unacked", "Evaluations being scheduled."),
		objects:     r.Gauge("drover_state_objects", "Objects in the state store.", "table"),
		prefetch: r.Counter("drover_prefetch_ahead_pulls_total",
			"Pulls ahead of the wave granted by this server as leader, by outcome: started, finished, failed, cancelled.", "outcome"),
	}
}

func (m *agentMetrics) observeRequest(method string, d time.Duration) {
	m.requests.WithLabels(method).Inc()
	m.requestTime.Observe(d.Seconds())
}

// refresh sets the state gauges from srv.
func (m *agentMetrics) refresh(srv *nomad.Server) {
	g := srv.StateGauges()
	for t, idx := range g.TableIndex {
		m.tableIndex.WithLabels(t).Set(float64(idx))
	}
	leader := 0.0
	if srv.IsLeader() {
		leader = 1
	}
	m.raftLeader.Set(leader)
	_, b := srv.Stats()
	m.brokerReady.Set(float64(b.TotalReady))
	m.brokerUnack.Set(float64(b.TotalUnacked))
	ps := srv.PrefetchStats()
	m.prefetchMu.Lock()
	defer m.prefetchMu.Unlock()
	for outcome, v := range map[string]int64{"started": ps.Started, "finished": ps.Finished, "failed": ps.Failed, "cancelled": ps.Cancelled} {
		c := m.prefetch.WithLabels(outcome)
		if d := float64(v) - c.Value(); d > 0 {
			c.Add(d)
		}
	}
	for t, n := range g.Objects {
		m.objects.WithLabels(t).Set(float64(n))
	}
}
