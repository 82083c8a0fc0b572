package nomad

import "github.com/drover-project/drover/nomad/state"

// StateGauges are the figures of the state store the agent's metrics
// export.
type StateGauges struct {
	// TableIndex is the latest raft index applied to each of the tables
	// of jobs, nodes, allocations, evaluations and deployments (by table
	// name).
	TableIndex map[string]uint64
	// Objects counts the jobs and allocations (by table name); a failed
	// count is left out.
	Objects map[string]int
}

// StateGauges reads the store's gauges.
func (s *Server) StateGauges() StateGauges {
	st := s.State()
	g := StateGauges{TableIndex: map[string]uint64{}, Objects: map[string]int{}}
	for _, t := range []string{state.TableJobs, state.TableNodes, state.TableAllocs, state.TableEvals, state.TableDeployments} {
		g.TableIndex[t] = st.Index(t)
	}
	snap := st.Snapshot()
	if jobs, err := snap.Jobs(nil, "*"); err == nil {
		g.Objects[state.TableJobs] = len(jobs)
	}
	if allocs, err := snap.Allocs(nil); err == nil {
		g.Objects[state.TableAllocs] = len(allocs)
	}
	return g
}
