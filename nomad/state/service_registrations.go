package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// TableServiceRegistrations stores the native service catalog
// (*structs.ServiceRegistration).
const TableServiceRegistrations = "service_registrations"

// Indexes of the service registrations table besides id, job and node.
const (
	indexServiceName = "service_name"
	indexAlloc       = "alloc"
)

func serviceRegistrationsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableServiceRegistrations,
		Indexes: map[string]*memdb.IndexSchema{
			// id: one registration per (Namespace, ID).
			indexID: nsIDIndex("ID"),
			// service_name: a service's instances in a namespace; a
			// prefix lookup on the namespace alone lists it whole.
			indexServiceName: {Name: indexServiceName, Indexer: nsCompound("ServiceName")},
			indexAlloc:       {Name: indexAlloc, Indexer: &memdb.StringFieldIndex{Field: "AllocID"}},
			indexNode:        {Name: indexNode, Indexer: &memdb.StringFieldIndex{Field: "NodeID"}},
			indexJob:         {Name: indexJob, Indexer: nsCompound("JobID")},
		},
	}
}

// UpsertServiceRegistrations writes regs at index: a new registration is
// created at index, one that changed keeps its CreateIndex, one that is
// the same as stored is left alone. A registration whose allocation is
// gone or over on its node, or whose node is down, is skipped: the entry
// may have been proposed before that was written.
func (s *StateStore) UpsertServiceRegistrations(index uint64, regs []*structs.ServiceRegistration) error {
	return s.write(index, func(tx *writeTxn) error {
		for _, r := range regs {
			if r == nil || r.ID == "" {
				return fmt.Errorf("state: service registration without an ID")
			}
			a, err := tx.allocByID(r.AllocID)
			if err != nil {
				return err
			}
			if a == nil || a.ClientTerminal() {
				continue
			}
			n, err := nodeByID(tx.Txn, nil, r.NodeID)
			if err != nil {
				return err
			}
			if n == nil || n.Status == structs.NodeStatusDown {
				continue
			}
			next := r.Copy()
			next.Namespace = nsOrDefault(next.Namespace)
			raw, err := tx.First(TableServiceRegistrations, indexID, next.Namespace, next.ID)
			if err != nil {
				return fmt.Errorf("state: lookup service registration: %w", err)
			}
			next.CreateIndex, next.ModifyIndex = index, index
			if cur, ok := raw.(*structs.ServiceRegistration); ok {
				if cur.SameAs(next) {
					continue
				}
				next.CreateIndex = cur.CreateIndex
			}
			if err := tx.insert(TableServiceRegistrations, next); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteServiceRegistrations carries out req at index: the registrations
// with the IDs given (in any namespace) and every registration of the
// allocations given. Missing ones are skipped.
func (s *StateStore) DeleteServiceRegistrations(index uint64, req *structs.ServiceRegistrationDeleteRequest) error {
	return s.write(index, func(tx *writeTxn) error {
		ids := map[string]bool{}
		for _, id := range req.IDs {
			ids[id] = true
		}
		if len(ids) > 0 {
			all, err := list[*structs.ServiceRegistration](tx.Txn, nil, TableServiceRegistrations, indexID)
			if err != nil {
				return err
			}
			for _, r := range all {
				if ids[r.ID] {
					if err := tx.delete(TableServiceRegistrations, r); err != nil {
						return err
					}
				}
			}
		}
		for _, id := range req.AllocIDs {
			if err := tx.deleteServicesBy(indexAlloc, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// deleteServicesBy deletes every registration at index (alloc or node) key.
func (tx *writeTxn) deleteServicesBy(index, key string) error {
	regs, err := list[*structs.ServiceRegistration](tx.Txn, nil, TableServiceRegistrations, index, key)
	if err != nil {
		return err
	}
	for _, r := range regs {
		if err := tx.delete(TableServiceRegistrations, r); err != nil {
			return err
		}
	}
	return nil
}

// ServiceRegistrations returns every registration in namespace ns ("*":
// all), sorted by namespace, service name and ID.
func (r reader) ServiceRegistrations(ws memdb.WatchSet, ns string) ([]*structs.ServiceRegistration, error) {
	if ns == allNamespaces {
		return list[*structs.ServiceRegistration](r.txn(), ws, TableServiceRegistrations, indexServiceName)
	}
	return list[*structs.ServiceRegistration](r.txn(), ws, TableServiceRegistrations, indexServiceName+"_prefix", nsOrDefault(ns), "")
}

// ServiceRegistrationsByName returns the registrations of service name in
// namespace ns, sorted by ID (the index orders equal names by ID).
func (r reader) ServiceRegistrationsByName(ws memdb.WatchSet, ns, name string) ([]*structs.ServiceRegistration, error) {
	return list[*structs.ServiceRegistration](r.txn(), ws, TableServiceRegistrations, indexServiceName, nsOrDefault(ns), name)
}

// ServiceRegistrationByID returns the registration id of namespace ns, or nil.
func (r reader) ServiceRegistrationByID(ws memdb.WatchSet, ns, id string) (*structs.ServiceRegistration, error) {
	raw, err := first(r.txn(), ws, TableServiceRegistrations, indexID, nsOrDefault(ns), id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.ServiceRegistration), nil
}

// ServiceRegistrationsByAlloc returns the registrations of allocation id.
func (r reader) ServiceRegistrationsByAlloc(ws memdb.WatchSet, id string) ([]*structs.ServiceRegistration, error) {
	return list[*structs.ServiceRegistration](r.txn(), ws, TableServiceRegistrations, indexAlloc, id)
}

// ServiceRegistrationsByNode returns the registrations of node id.
func (r reader) ServiceRegistrationsByNode(ws memdb.WatchSet, id string) ([]*structs.ServiceRegistration, error) {
	return list[*structs.ServiceRegistration](r.txn(), ws, TableServiceRegistrations, indexNode, id)
}

// ServiceRegistrationsByJob returns the registrations of job (ns, id).
func (r reader) ServiceRegistrationsByJob(ws memdb.WatchSet, ns, id string) ([]*structs.ServiceRegistration, error) {
	return list[*structs.ServiceRegistration](r.txn(), ws, TableServiceRegistrations, indexJob, nsOrDefault(ns), id)
}

// ServiceRegistrationRestore restores a registration from a snapshot.
func (r *Restore) ServiceRegistrationRestore(reg *structs.ServiceRegistration) error {
	return r.insert(TableServiceRegistrations, reg)
}
