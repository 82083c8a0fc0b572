package nomad

import (
	"context"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// drainedNodes returns the IDs of draining nodes that no longer run any live
// allocation: their drain is complete.
func drainedNodes(nodes []*structs.Node, allocsByNode func(nodeID string) ([]*structs.Allocation, error)) ([]string, error) {
	var done []string
	for _, n := range nodes {
		if !n.Drain {
			continue
		}
		allocs, err := allocsByNode(n.ID)
		if err != nil {
			return nil, err
		}
		live := false
		for _, a := range allocs {
			// An allocation asked to stop is still live until its client
			// reports it finished, unless the node is down.
			if !a.ClientTerminal() && (a.DesiredStatus == structs.AllocDesiredStatusRun || n.Status != structs.NodeStatusDown) {
				live = true
				break
			}
		}
		if !live {
			done = append(done, n.ID)
		}
	}
	return done, nil
}

// runDrainer completes drains on the leader: it watches nodes and
// allocations and ends the drain of every draining node left with no live
// allocation (the node stays ineligible).
func (s *Server) runDrainer(ctx context.Context) {
	var index uint64
	for ctx.Err() == nil {
		out, next, err := s.State().BlockingQuery(ctx, index, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
			nodes, err := snap.Nodes(ws)
			if err != nil {
				return nil, 0, err
			}
			done, err := drainedNodes(nodes, func(id string) ([]*structs.Allocation, error) { return snap.AllocsByNode(ws, id) })
			return done, max(snap.Index(state.TableNodes), snap.Index(state.TableAllocs)), err
		})
		if err != nil {
			s.logger.Error("drainer query failed", "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		index = next
		for _, id := range out.([]string) {
			if _, _, err := s.NodeDrain(&structs.NodeUpdateDrainRequest{NodeID: id, Complete: true}); err != nil && ctx.Err() == nil {
				s.logger.Error("failed to complete node drain", "node_id", id, "error", err)
			} else {
				s.logger.Info("node drain complete", "node_id", id)
			}
		}
	}
}
