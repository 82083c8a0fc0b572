package fsm

import (
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// Auth method and binding rule snapshot records (range 50-55).
const (
	aclAuthMethodRecord  recordType = 50
	aclBindingRuleRecord recordType = 51
)

// applyACLAuth dispatches the auth method and binding rule range (50-55);
// ok is false for other types. Each entry returns the state store's error
// (the request was refused and nothing written) or nil.
func (f *FSM) applyACLAuth(t structs.MessageType, index uint64, buf []byte) (any, bool) {
	switch t {
	case structs.ACLAuthMethodUpsertRequestType:
		var req structs.ACLAuthMethodUpsertRequest
		decode(index, buf, &req)
		return f.state.UpsertACLAuthMethods(index, req.AuthMethods), true
	case structs.ACLAuthMethodDeleteRequestType:
		var req structs.ACLAuthMethodDeleteRequest
		decode(index, buf, &req)
		return f.state.DeleteACLAuthMethods(index, req.Names), true
	case structs.ACLBindingRuleUpsertRequestType:
		var req structs.ACLBindingRuleUpsertRequest
		decode(index, buf, &req)
		return f.state.UpsertACLBindingRules(index, req.Rules), true
	case structs.ACLBindingRuleDeleteRequestType:
		var req structs.ACLBindingRuleDeleteRequest
		decode(index, buf, &req)
		return f.state.DeleteACLBindingRules(index, req.IDs), true
	}
	return nil, false
}

// writeACLAuth writes the auth method and binding rule tables.
func writeACLAuth(enc *recordWriter, snap *state.Snapshot) {
	methods, err := snap.ACLAuthMethods(nil)
	enc.fail(err)
	writeAll(enc, aclAuthMethodRecord, methods)
	rules, err := snap.ACLBindingRules(nil)
	enc.fail(err)
	writeAll(enc, aclBindingRuleRecord, rules)
}

// restoreACLAuth restores one record of the range; ok is false for other
// record types.
func restoreACLAuth(t recordType, dec decoder, r *state.Restore) (ok bool, err error) {
	switch t {
	case aclAuthMethodRecord:
		return true, restoreOne(dec, r.ACLAuthMethodRestore)
	case aclBindingRuleRecord:
		return true, restoreOne(dec, r.ACLBindingRuleRestore)
	}
	return false, nil
}
