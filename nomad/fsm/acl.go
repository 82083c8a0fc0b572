package fsm

import (
	"github.com/drover-project/drover/nomad/structs"
)

// ACL and namespace entries. Each returns the state store's error (the
// request was refused and nothing written) or nil.

func (f *FSM) applyACLPolicyUpsert(index uint64, buf []byte) any {
	var req structs.ACLPolicyUpsertRequest
	decode(index, buf, &req)
	return f.state.UpsertACLPolicies(index, req.Policies)
}

func (f *FSM) applyACLPolicyDelete(index uint64, buf []byte) any {
	var req structs.ACLPolicyDeleteRequest
	decode(index, buf, &req)
	return f.state.DeleteACLPolicies(index, req.Names)
}

func (f *FSM) applyACLTokenUpsert(index uint64, buf []byte) any {
	var req structs.ACLTokenUpsertRequest
	decode(index, buf, &req)
	return f.state.UpsertACLTokens(index, req.Tokens)
}

func (f *FSM) applyACLTokenDelete(index uint64, buf []byte) any {
	var req structs.ACLTokenDeleteRequest
	decode(index, buf, &req)
	return f.state.DeleteACLTokens(index, req.AccessorIDs)
}

func (f *FSM) applyACLTokenBootstrap(index uint64, buf []byte) any {
	var req structs.ACLTokenBootstrapRequest
	decode(index, buf, &req)
	return f.state.BootstrapACLToken(index, req.ResetIndex, req.Token)
}

func (f *FSM) applyACLRoleUpsert(index uint64, buf []byte) any {
	var req structs.ACLRoleUpsertRequest
	decode(index, buf, &req)
	return f.state.UpsertACLRoles(index, req.Roles)
}

func (f *FSM) applyACLRoleDelete(index uint64, buf []byte) any {
	var req structs.ACLRoleDeleteRequest
	decode(index, buf, &req)
	return f.state.DeleteACLRoles(index, req.IDs)
}

func (f *FSM) applyNamespaceUpsert(index uint64, buf []byte) any {
	var req structs.NamespaceUpsertRequest
	decode(index, buf, &req)
	return f.state.UpsertNamespaces(index, req.Namespaces)
}

func (f *FSM) applyNamespaceDelete(index uint64, buf []byte) any {
	var req structs.NamespaceDeleteRequest
	decode(index, buf, &req)
	return f.state.DeleteNamespaces(index, req.Names)
}

func (f *FSM) applyOneTimeTokenUpsert(index uint64, buf []byte) any {
	var req structs.OneTimeTokenUpsertRequest
	decode(index, buf, &req)
	return f.state.UpsertOneTimeToken(index, req.Token, req.Delete)
}

// applyACL dispatches the ACL range (110-119); ok is false for other types.
func (f *FSM) applyACL(t structs.MessageType, index uint64, buf []byte) (any, bool) {
	switch t {
	case structs.ACLPolicyUpsertRequestType:
		return f.applyACLPolicyUpsert(index, buf), true
	case structs.ACLPolicyDeleteRequestType:
		return f.applyACLPolicyDelete(index, buf), true
	case structs.ACLTokenUpsertRequestType:
		return f.applyACLTokenUpsert(index, buf), true
	case structs.ACLTokenDeleteRequestType:
		return f.applyACLTokenDelete(index, buf), true
	case structs.ACLTokenBootstrapRequestType:
		return f.applyACLTokenBootstrap(index, buf), true
	case structs.ACLRoleUpsertRequestType:
		return f.applyACLRoleUpsert(index, buf), true
	case structs.ACLRoleDeleteRequestType:
		return f.applyACLRoleDelete(index, buf), true
	case structs.NamespaceUpsertRequestType:
		return f.applyNamespaceUpsert(index, buf), true
	case structs.NamespaceDeleteRequestType:
		return f.applyNamespaceDelete(index, buf), true
	case structs.OneTimeTokenUpsertRequestType:
		return f.applyOneTimeTokenUpsert(index, buf), true
	}
	return nil, false
}
