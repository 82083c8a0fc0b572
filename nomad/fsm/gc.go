package fsm

import "github.com/drover-project/drover/nomad/structs"

// applyGC deletes what the garbage collector decided; objects that changed
// since the decision are skipped (state.DeleteGC).
func (f *FSM) applyGC(index uint64, buf []byte) error {
	var req structs.GCRequest
	decode(index, buf, &req)
	_, err := f.state.DeleteGC(index, &req)
	return err
}
