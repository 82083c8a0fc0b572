package fsm

import (
	"fmt"

	"github.com/drover-project/drover/nomad/structs"
)

// applyKeyringUpsert stores a root key (see state.UpsertRootKey).
func (f *FSM) applyKeyringUpsert(index uint64, buf []byte) any {
	var req structs.KeyringUpsertRequest
	decode(index, buf, &req)
	if req.Key == nil {
		return fmt.Errorf("fsm: keyring upsert at index %d without a key", index)
	}
	return f.state.UpsertRootKey(index, req.Key)
}

// applyKeyringDelete removes a root key; the active key is refused.
func (f *FSM) applyKeyringDelete(index uint64, buf []byte) any {
	var req structs.KeyringDeleteRequest
	decode(index, buf, &req)
	return f.state.DeleteRootKey(index, req.KeyID)
}
