package scheduler

import (
	"github.com/drover-project/drover/nomad/structs"
)

// metricBase holds the node counts every AllocationMetric of one
// evaluation shares.
type metricBase struct {
	pool      string
	inPool    int            // nodes in the job's node pool
	available map[string]int // ready nodes per datacenter of the job; read only
}

// newMetricBase counts job's nodes (job may be nil: a purged job places
// nothing).
func newMetricBase(job *structs.Job, nodes []*structs.Node) metricBase {
	m := metricBase{available: map[string]int{}}
	if job == nil {
		return m
	}
	m.pool = job.NodePool
	// Nodes of one datacenter tend to follow each other: a run of them is
	// judged and counted once instead of a map write per node.
	var dc string
	run, matches := 0, false
	flush := func() {
		if run > 0 && matches {
			m.available[dc] += run
		}
	}
	for _, n := range nodes {
		if !PoolMatches(job.NodePool, n.NodePool) {
			continue
		}
		m.inPool++
		if !n.Ready() {
			continue
		}
		if run == 0 || n.Datacenter != dc {
			flush()
			dc, run = n.Datacenter, 0
			matches = DatacenterMatches(job.Datacenters, dc)
		}
		run++
	}
	flush()
	return m
}

// forGroup returns a new metric of g's node evaluation: nodes evaluated and
// filtered by constraint, class and reason. Nodes outside the job's
// datacenters or pool, and nodes not ready, are not evaluated.
func (m metricBase) forGroup(g *SystemGroupResult) *structs.AllocationMetric {
	am := &structs.AllocationMetric{
		NodesEvaluated: g.NodesEvaluated,
		NodesFiltered:  len(g.Filtered),
		NodesInPool:    m.inPool,
		NodePool:       m.pool,
		NodesAvailable: make(map[string]int, len(m.available)),
	}
	for dc, n := range m.available {
		am.NodesAvailable[dc] = n
	}
	if len(g.Filtered) == 0 {
		return am
	}
	am.ConstraintFiltered, am.ClassFiltered = map[string]int{}, map[string]int{}
	for _, f := range g.Filtered {
		am.ConstraintFiltered[f.Reason]++
		if f.Node.NodeClass != "" {
			am.ClassFiltered[f.Node.NodeClass]++
		}
	}
	return am
}
