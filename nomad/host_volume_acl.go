package nomad

import (
	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

// allowHostVolumes reports whether caller may mount every host volume the
// job's groups ask for, as in Nomad: a read_only volume needs
// mount-readonly or mount-readwrite on its source, any other
// mount-readwrite. Rules name the source (a per_alloc volume's too).
func allowHostVolumes(caller *acl.ACL, job *structs.Job) bool {
	for _, tg := range job.TaskGroups {
		if tg == nil {
			continue
		}
		for _, v := range tg.Volumes {
			if v == nil || v.Type != structs.VolumeTypeHost {
				continue
			}
			rw := caller.AllowHostVolumeOperation(v.Source, acl.HostVolumeCapabilityMountReadWrite)
			if !rw && !(v.ReadOnly && caller.AllowHostVolumeOperation(v.Source, acl.HostVolumeCapabilityMountReadOnly)) {
				return false
			}
		}
	}
	return true
}
