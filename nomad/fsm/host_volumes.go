package fsm

import (
	"fmt"

	"github.com/drover-project/drover/nomad/structs"
)

// applyHostVolumes applies the dynamic host volume messages; ok is false
// for any other type.
func (f *FSM) applyHostVolumes(msgType structs.MessageType, index uint64, buf []byte) (resp any, ok bool) {
	switch msgType {
	case structs.HostVolumeUpsertRequestType:
		var req structs.HostVolumeUpsertRequest
		decode(index, buf, &req)
		if req.Volume == nil {
			return fmt.Errorf("fsm: host volume upsert at index %d without a volume", index), true
		}
		return f.state.UpsertHostVolume(index, req.Volume), true
	case structs.HostVolumeDeleteRequestType:
		var req structs.HostVolumeDeleteRequest
		decode(index, buf, &req)
		return f.state.DeleteHostVolume(index, req.Namespace, req.ID), true
	}
	return nil, false
}
