package fsm

import (
	"fmt"

	"github.com/drover-project/drover/nomad/structs"
)

// applyVariables writes one variable (see state.ApplyVariable); it returns
// a *structs.VariablesApplyResponse or an error.
func (f *FSM) applyVariables(index uint64, buf []byte) any {
	var req structs.VariablesApplyRequest
	decode(index, buf, &req)
	if req.Var == nil {
		return fmt.Errorf("fsm: variables apply at index %d without a variable", index)
	}
	resp, err := f.state.ApplyVariable(index, &req)
	if err != nil {
		return err
	}
	return resp
}
