package fsm

import (
	"github.com/drover-project/drover/nomad/structs"
)

// applyServiceRegistrationUpsert writes registrations of the native
// service catalog.
func (f *FSM) applyServiceRegistrationUpsert(index uint64, buf []byte) any {
	var req structs.ServiceRegistrationUpsertRequest
	decode(index, buf, &req)
	return f.state.UpsertServiceRegistrations(index, req.Services)
}

// applyServiceRegistrationDelete deletes registrations by ID and by
// allocation.
func (f *FSM) applyServiceRegistrationDelete(index uint64, buf []byte) any {
	var req structs.ServiceRegistrationDeleteRequest
	decode(index, buf, &req)
	return f.state.DeleteServiceRegistrations(index, &req)
}
