package state

import "github.com/hashicorp/go-memdb"

// Change is one object a write created, updated or deleted: Before is nil
// for a creation, After is nil for a deletion. Both are the store's shared
// objects: never mutate them.
type Change struct {
	Table  string
	Before any
	After  any
}

// TrackChanges turns change recording on or off. While it is on, every
// committed write appends the objects it changed (the index table aside)
// to a list that TakeChanges hands over; the FSM turns it on when something
// consumes the changes (the event stream) and takes them after each entry.
func (s *StateStore) TrackChanges(on bool) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.tracking = on
	if !on {
		s.changes = nil
	}
}

// TakeChanges returns the changes recorded since the last call, in commit
// order, and forgets them.
func (s *StateStore) TakeChanges() []Change {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	out := s.changes
	s.changes = nil
	return out
}

// recordChanges appends the changes of tx (which must track changes) to the
// store's list. The caller holds writeMu.
func (s *StateStore) recordChanges(changes memdb.Changes) {
	for _, c := range changes {
		if c.Table == TableIndex {
			continue
		}
		s.changes = append(s.changes, Change{Table: c.Table, Before: c.Before, After: c.After})
	}
}
