package scheduler

import "github.com/drover-project/drover/nomad/structs"

// ReasonMissingHostVolumes is the ConstraintFiltered key of nodes that lack
// a host volume the group asks for, or offer it read-only to a volume
// block that is not (Nomad's wording).
const ReasonMissingHostVolumes = "missing compatible host volumes"

// HostVolumesMet reports whether node offers every host volume of tg (of
// a job in namespace) that the allocation with index allocIndex asks for:
// by source name (with per_alloc, source + "[<index>]"), writable unless
// the volume block is read_only, and, for a dynamic host volume, of the
// job's namespace. perAlloc false skips the per_alloc volumes (they depend
// on the allocation, which the caller checks apart).
func HostVolumesMet(node *structs.Node, tg *structs.TaskGroup, namespace string, allocIndex int, perAlloc bool) bool {
	for _, req := range tg.Volumes {
		if req == nil || req.Type != structs.VolumeTypeHost || (req.PerAlloc && !perAlloc) {
			continue
		}
		hv := node.HostVolumes[req.HostVolumeSource(allocIndex)]
		if hv == nil || (hv.ReadOnly && !req.ReadOnly) || (hv.ID != "" && hv.Namespace != orDefaultNamespace(namespace)) {
			return false
		}
	}
	return true
}

// hasPerAllocVolumes reports whether tg asks for a per_alloc host volume.
func hasPerAllocVolumes(tg *structs.TaskGroup) bool {
	for _, req := range tg.Volumes {
		if req != nil && req.PerAlloc {
			return true
		}
	}
	return false
}

func orDefaultNamespace(ns string) string {
	if ns == "" {
		return structs.DefaultNamespace
	}
	return ns
}
