package state

import (
	"errors"
	"fmt"
	"sort"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// TableHostVolumes stores dynamic host volumes (*structs.HostVolume).
const TableHostVolumes = "host_volumes"

func hostVolumesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name:    TableHostVolumes,
		Indexes: map[string]*memdb.IndexSchema{indexID: nsIDIndex("ID")},
	}
}

// UpsertHostVolume writes v at index (create and modify indexes are the
// store's; CreateIndex and CreateTime are kept from the stored version).
// A volume the node already reports (its Node.HostVolumes entry carries
// the volume's ID) is ready with the node's path. Another volume of the
// same name on the node (any namespace) is refused with ErrConflict.
func (s *StateStore) UpsertHostVolume(index uint64, v *structs.HostVolume) error {
	if v == nil || v.ID == "" {
		return errors.New("state: upsert host volume without an ID")
	}
	return s.write(index, func(tx *writeTxn) error {
		n := v.Copy()
		n.Namespace = nsOrDefault(n.Namespace)
		raw, err := tx.First(TableHostVolumes, indexID, n.Namespace, n.ID)
		if err != nil {
			return fmt.Errorf("state: lookup host volume: %w", err)
		}
		n.CreateIndex, n.ModifyIndex = index, index
		if cur, ok := raw.(*structs.HostVolume); ok {
			n.CreateIndex, n.CreateTime = cur.CreateIndex, cur.CreateTime
		}
		// A node offers its host volumes by name: a second volume of the
		// name there (two creates checked against one snapshot) could
		// never be offered.
		all, err := list[*structs.HostVolume](tx.Txn, nil, TableHostVolumes, indexID)
		if err != nil {
			return err
		}
		for _, o := range all {
			if o.NodeID == n.NodeID && o.Name == n.Name && (o.Namespace != n.Namespace || o.ID != n.ID) {
				return fmt.Errorf("node %q already has a host volume named %q (%s): %w", n.NodeID, n.Name, o.ID, ErrConflict)
			}
		}
		node, err := nodeByID(tx.Txn, nil, n.NodeID)
		if err != nil {
			return err
		}
		if node != nil {
			if hv := node.HostVolumes[n.Name]; hv != nil && hv.ID == n.ID {
				n.State, n.HostPath = structs.HostVolumeStateReady, hv.Path
			}
		}
		return tx.insert(TableHostVolumes, n)
	})
}

// DeleteHostVolume deletes the volume (ns, id); a missing one is not an
// error.
func (s *StateStore) DeleteHostVolume(index uint64, ns, id string) error {
	return s.write(index, func(tx *writeTxn) error {
		raw, err := tx.First(TableHostVolumes, indexID, nsOrDefault(ns), id)
		if err != nil || raw == nil {
			return err
		}
		return tx.delete(TableHostVolumes, raw)
	})
}

// syncNodeHostVolumes is the node side of dynamic host volumes, in a node
// upsert: each of the node's entries with an ID gets its volume's
// namespace (jobs of that namespace only may mount it; an entry whose
// volume is gone is dropped), and each pending volume the node now reports
// becomes ready with the node's path.
func syncNodeHostVolumes(tx *writeTxn, n *structs.Node) error {
	all, err := list[*structs.HostVolume](tx.Txn, nil, TableHostVolumes, indexID)
	if err != nil {
		return err
	}
	byID := map[string]*structs.HostVolume{}
	for _, v := range all {
		if v.NodeID == n.ID {
			byID[v.ID] = v
		}
	}
	var vols map[string]*structs.ClientHostVolumeConfig
	for name, hv := range n.HostVolumes {
		if vols == nil {
			vols = make(map[string]*structs.ClientHostVolumeConfig, len(n.HostVolumes))
		}
		if hv == nil || hv.ID == "" {
			vols[name] = hv
			continue
		}
		v := byID[hv.ID]
		if v == nil || v.Name != name {
			continue
		}
		c := *hv
		c.Namespace = v.Namespace
		vols[name] = &c
		if v.State != structs.HostVolumeStateReady || v.HostPath != hv.Path {
			next := v.Copy()
			next.State, next.HostPath, next.ModifyIndex = structs.HostVolumeStateReady, hv.Path, tx.index
			if err := tx.insert(TableHostVolumes, next); err != nil {
				return err
			}
		}
	}
	n.HostVolumes = vols
	return nil
}

// nodeHostVolumesAvailability sets the state of the dynamic host volumes
// of n after a status change: unavailable while the node is down or
// disconnected, ready again when it is ready and reports the volume (a
// pending volume stays pending).
func nodeHostVolumesAvailability(tx *writeTxn, n *structs.Node) error {
	all, err := list[*structs.HostVolume](tx.Txn, nil, TableHostVolumes, indexID)
	if err != nil {
		return err
	}
	for _, v := range all {
		if v.NodeID != n.ID || v.State == structs.HostVolumeStatePending {
			continue
		}
		want := structs.HostVolumeStateUnavailable
		if hv := n.HostVolumes[v.Name]; n.Status == structs.NodeStatusReady && hv != nil && hv.ID == v.ID {
			want = structs.HostVolumeStateReady
		}
		if v.State == want {
			continue
		}
		next := v.Copy()
		next.State, next.ModifyIndex = want, tx.index
		if err := tx.insert(TableHostVolumes, next); err != nil {
			return err
		}
	}
	return nil
}

// HostVolumeByID returns the volume (ns, id), or nil.
func (r reader) HostVolumeByID(ws memdb.WatchSet, ns, id string) (*structs.HostVolume, error) {
	raw, err := first(r.txn(), ws, TableHostVolumes, indexID, nsOrDefault(ns), id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.HostVolume), nil
}

// HostVolumes returns the volumes of namespace ns ("*": all), sorted by
// namespace and ID.
func (r reader) HostVolumes(ws memdb.WatchSet, ns string) ([]*structs.HostVolume, error) {
	if ns == allNamespaces {
		return list[*structs.HostVolume](r.txn(), ws, TableHostVolumes, indexID)
	}
	return list[*structs.HostVolume](r.txn(), ws, TableHostVolumes, indexIDPrefix, nsOrDefault(ns), "")
}

// HostVolumesByNode returns the volumes placed on node, of every
// namespace, sorted by ID.
func (r reader) HostVolumesByNode(ws memdb.WatchSet, nodeID string) ([]*structs.HostVolume, error) {
	all, err := list[*structs.HostVolume](r.txn(), ws, TableHostVolumes, indexID)
	if err != nil {
		return nil, err
	}
	var out []*structs.HostVolume
	for _, v := range all {
		if v.NodeID == nodeID {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// HostVolumeRestore restores a volume from a snapshot.
func (r *Restore) HostVolumeRestore(v *structs.HostVolume) error {
	return r.insert(TableHostVolumes, v)
}
