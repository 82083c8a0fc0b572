package state

import (
	"time"

	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// maxNodeEvents bounds the event history kept per node (oldest dropped).
const maxNodeEvents = 10

// nodeByID returns node id, or nil.
func nodeByID(txn *memdb.Txn, ws memdb.WatchSet, id string) (*structs.Node, error) {
	raw, err := first(txn, ws, TableNodes, indexID, id)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.Node), nil
}

// NodeByID returns node id, or nil.
func (r reader) NodeByID(ws memdb.WatchSet, id string) (*structs.Node, error) {
	return nodeByID(r.txn(), ws, id)
}

// NodeBySecretID returns the node whose secret is secretID, or nil.
func (r reader) NodeBySecretID(ws memdb.WatchSet, secretID string) (*structs.Node, error) {
	if secretID == "" {
		return nil, nil
	}
	raw, err := first(r.txn(), ws, TableNodes, indexSecretID, secretID)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.Node), nil
}

// Nodes returns every node, sorted by ID.
func (r reader) Nodes(ws memdb.WatchSet) ([]*structs.Node, error) {
	return list[*structs.Node](r.txn(), ws, TableNodes, indexID)
}

// NodesByIDPrefix returns the nodes whose ID starts with prefix, sorted by ID.
func (r reader) NodesByIDPrefix(ws memdb.WatchSet, prefix string) ([]*structs.Node, error) {
	return list[*structs.Node](r.txn(), ws, TableNodes, indexIDPrefix, prefix)
}

// UpsertNode registers node or updates its registration.
//
// For an existing node, CreateIndex, the event history and the
// server-controlled fields (SchedulingEligibility, Drain) are kept, and
// SecretID must be empty (kept) or equal to the stored one: a different
// secret is ErrConflict. A new node with no eligibility is eligible. Another
// node holding the same secret is ErrConflict. node is not modified.
func (s *StateStore) UpsertNode(index uint64, node *structs.Node) error {
	if node == nil {
		return fmt.Errorf("state: upsert node: nil node")
	}
	return s.write(index, func(tx *writeTxn) error {
		n := node.Copy()
		exist, err := nodeByID(tx.Txn, nil, n.ID)
		if err != nil {
			return err
		}
		if exist != nil {
			if err := mergeExistingNode(n, exist); err != nil {
				return err
			}
		} else {
			n.CreateIndex = tx.index
			if n.SchedulingEligibility == "" {
				n.SchedulingEligibility = structs.NodeSchedulingEligible
			}
		}
		if n.SecretID != "" {
			holder, err := first(tx.Txn, nil, TableNodes, indexSecretID, n.SecretID)
			if err != nil {
				return err
			}
			if h, ok := holder.(*structs.Node); ok && h.ID != n.ID {
				return fmt.Errorf("node %q: secret ID is in use by another node: %w", n.ID, ErrConflict)
			}
		}
		if err := syncNodeHostVolumes(tx, n); err != nil {
			return err
		}
		n.Events = stampNodeEvents(n.Events, tx.index)
		n.ModifyIndex = tx.index
		if err := ensureNodePool(tx, n.NodePool); err != nil {
			return err
		}
		return tx.insert(TableNodes, n)
	})
}

// mergeExistingNode keeps in n (a re-registration) what the server owns of
// exist.
func mergeExistingNode(n, exist *structs.Node) error {
	switch {
	case n.SecretID == "":
		n.SecretID = exist.SecretID
	case exist.SecretID != "" && n.SecretID != exist.SecretID:
		return fmt.Errorf("node %q: secret ID does not match the registered one: %w", n.ID, ErrConflict)
	}
	n.CreateIndex = exist.CreateIndex
	n.SchedulingEligibility = exist.SchedulingEligibility
	n.Drain, n.DrainStrategy, n.LastDrain = exist.Drain, exist.DrainStrategy, exist.LastDrain
	if len(exist.Events) > 0 {
		n.Events = append([]*structs.NodeEvent(nil), exist.Events...)
	}
	return nil
}

// stampNodeEvents returns events with CreateIndex set to index where unset
// (copying those events) and at most maxNodeEvents, newest last.
func stampNodeEvents(events []*structs.NodeEvent, index uint64) []*structs.NodeEvent {
	if len(events) > maxNodeEvents {
		events = events[len(events)-maxNodeEvents:]
	}
	out := make([]*structs.NodeEvent, len(events))
	for i, ev := range events {
		if ev.CreateIndex == 0 {
			c := *ev
			c.CreateIndex = index
			ev = &c
		}
		out[i] = ev
	}
	return out
}

// updateNode applies fn to a copy of node id and stores it. A missing node is
// ErrNotFound.
func (s *StateStore) updateNode(index uint64, id, what string, fn func(n *structs.Node) error) error {
	return s.write(index, func(tx *writeTxn) error {
		_, err := updateNodeTx(tx, id, what, fn)
		return err
	})
}

// updateNodeTx is updateNode's write in tx; it returns the node written.
func updateNodeTx(tx *writeTxn, id, what string, fn func(n *structs.Node) error) (*structs.Node, error) {
	exist, err := nodeByID(tx.Txn, nil, id)
	if err != nil {
		return nil, err
	}
	if exist == nil {
		return nil, fmt.Errorf("update %s of node %q: %w", what, id, ErrNotFound)
	}
	n := exist.Copy()
	if err := fn(n); err != nil {
		return nil, fmt.Errorf("update %s of node %q: %w", what, id, err)
	}
	n.ModifyIndex = tx.index
	if n.Status == structs.NodeStatusDown {
		// A node that is down advertises none of its services.
		if err := tx.deleteServicesBy(indexNode, id); err != nil {
			return nil, err
		}
	}
	return n, tx.insert(TableNodes, n)
}

// UpdateNodeStatus sets node id's status, records updatedAt (unix seconds)
// as StatusUpdatedAt and appends ev (or nil) to its events. The node's
// dynamic host volumes follow (see nodeHostVolumesAvailability).
func (s *StateStore) UpdateNodeStatus(index uint64, id, status string, updatedAt int64, ev *structs.NodeEvent) error {
	return s.write(index, func(tx *writeTxn) error {
		n, err := updateNodeTx(tx, id, "status", func(n *structs.Node) error {
			n.Status = status
			n.StatusUpdatedAt = updatedAt
			if ev != nil {
				n.Events = stampNodeEvents(append(n.Events, ev), index)
			}
			return nil
		})
		if err != nil {
			return err
		}
		return nodeHostVolumesAvailability(tx, n)
	})
}

// UpdateNodeEligibility sets node id's scheduling eligibility. A draining
// node cannot become eligible (ErrConflict), as in Nomad.
func (s *StateStore) UpdateNodeEligibility(index uint64, id, elig string, updatedAt int64) error {
	return s.updateNode(index, id, "eligibility", func(n *structs.Node) error {
		switch elig {
		case structs.NodeSchedulingEligible, structs.NodeSchedulingIneligible:
		default:
			return fmt.Errorf("invalid scheduling eligibility %q: %w", elig, ErrConflict)
		}
		if elig == structs.NodeSchedulingEligible && n.Drain {
			return fmt.Errorf("can not set node's scheduling eligibility to eligible while it is draining: %w", ErrConflict)
		}
		n.SchedulingEligibility = elig
		n.StatusUpdatedAt = updatedAt
		return nil
	})
}

// UpdateNodeDrain starts (drain true: the node also becomes ineligible) or
// ends a drain. Ending it makes the node eligible only when markEligible is
// set: a drain that completes leaves the node ineligible, as in Nomad.
func (s *StateStore) UpdateNodeDrain(index uint64, id string, drain, markEligible bool, updatedAt int64) error {
	return s.ApplyNodeDrain(index, &structs.NodeUpdateDrainRequest{NodeID: id, Drain: drain,
		MarkEligible: markEligible, UpdatedAt: updatedAt})
}

// ApplyNodeDrain starts, updates or ends the drain of node req.NodeID as
// UpdateNodeDrain does, and records its strategy and LastDrain: a started
// drain is "draining"; an ended one "complete" (req.Complete) or
// "canceled".
func (s *StateStore) ApplyNodeDrain(index uint64, req *structs.NodeUpdateDrainRequest) error {
	now := req.Time
	if now.IsZero() {
		now = time.Unix(req.UpdatedAt, 0).UTC()
	}
	return s.updateNode(index, req.NodeID, "drain", func(n *structs.Node) error {
		wasDraining := n.Drain
		n.Drain = req.Drain
		switch {
		case req.Drain:
			n.SchedulingEligibility = structs.NodeSchedulingIneligible
		case req.MarkEligible:
			n.SchedulingEligibility = structs.NodeSchedulingEligible
		}
		n.StatusUpdatedAt = req.UpdatedAt
		if req.Drain {
			started := now
			if wasDraining && n.DrainStrategy != nil {
				started = n.DrainStrategy.StartedAt
			}
			ds := &structs.DrainStrategy{DrainSpec: req.Spec, StartedAt: started}
			switch {
			case req.Spec.Deadline > 0:
				ds.ForceDeadline = now.Add(req.Spec.Deadline)
			case req.Spec.Deadline < 0:
				ds.ForceDeadline = now
			}
			n.DrainStrategy = ds
			n.LastDrain = &structs.DrainMetadata{StartedAt: started, UpdatedAt: now,
				Status: structs.DrainStatusDraining, Meta: req.Meta}
			if !wasDraining {
				n.Events = stampNodeEvents(append(n.Events, drainEvent(structs.NodeEventDrainSet, now)), index)
			}
			return nil
		}
		n.DrainStrategy = nil
		if wasDraining {
			last := &structs.DrainMetadata{StartedAt: now, UpdatedAt: now, Status: structs.DrainStatusCanceled}
			if n.LastDrain != nil {
				c := *n.LastDrain
				last = &c
				last.UpdatedAt = now
				last.Status = structs.DrainStatusCanceled
			}
			ev := drainEvent(structs.NodeEventDrainDisabled, now)
			if req.Complete {
				last.Status = structs.DrainStatusComplete
				ev = drainEvent(structs.NodeEventDrainComplete, now)
				if req.DeadlineReached {
					ev.Details = map[string]string{"deadline_reached": "true"}
				}
			}
			n.LastDrain = last
			n.Events = stampNodeEvents(append(n.Events, ev), index)
		}
		return nil
	})
}

func drainEvent(msg string, at time.Time) *structs.NodeEvent {
	return &structs.NodeEvent{Message: msg, Subsystem: structs.NodeEventSubsystemDrain, Timestamp: at}
}

// DeleteNodes removes the nodes ids. Any missing node is ErrNotFound and
// nothing is deleted. Their allocations stay.
func (s *StateStore) DeleteNodes(index uint64, ids []string) error {
	return s.write(index, func(tx *writeTxn) error {
		for _, id := range ids {
			n, err := nodeByID(tx.Txn, nil, id)
			if err != nil {
				return err
			}
			if n == nil {
				return fmt.Errorf("delete node %q: %w", id, ErrNotFound)
			}
			if err := tx.delete(TableNodes, n); err != nil {
				return err
			}
		}
		return nil
	})
}
