package structs

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Volume types of a group's volume block. Drover mounts host volumes
// only; CSI volumes are refused at registration.
const (
	VolumeTypeHost = "host"
	VolumeTypeCSI  = "csi"
)

// Propagation modes of a volume_mount, as in Nomad.
const (
	VolumeMountPropagationPrivate       = "private"
	VolumeMountPropagationHostToTask    = "host-to-task"
	VolumeMountPropagationBidirectional = "bidirectional"
)

// ClientHostVolumeConfig is a host volume a node offers (Node.HostVolumes,
// by name): a client's host_volume "name" { path, read_only } block, or a
// dynamic host volume the client created.
type ClientHostVolumeConfig struct {
	Path     string
	ReadOnly bool
	// ID is set for dynamic host volumes (see HostVolume), and Namespace,
	// the volume's, by the server when the node registers: only jobs of
	// that namespace may mount it.
	ID        string
	Namespace string
}

// VolumeRequest is a group's volume "name" block: which host volume
// (Source) of the node its tasks mount.
type VolumeRequest struct {
	Name     string
	Type     string
	Source   string
	ReadOnly bool
	// PerAlloc makes each allocation ask for its own volume:
	// Source + "[<alloc index>]".
	PerAlloc bool
}

// VolumeMount is a task's volume_mount block: where in the task a group
// volume is mounted.
type VolumeMount struct {
	Volume          string
	Destination     string
	ReadOnly        bool
	PropagationMode string
	// SELinuxLabel is kept so that a job read back validates again; a
	// non-empty one is refused.
	SELinuxLabel string
}

// HostVolumeSource returns the name of the node's host volume that an
// allocation with index allocIndex asks for: Source, or with PerAlloc
// Source + "[<index>]".
func (v *VolumeRequest) HostVolumeSource(allocIndex int) string {
	if v.PerAlloc {
		return v.Source + "[" + strconv.Itoa(allocIndex) + "]"
	}
	return v.Source
}

// AllocIndex returns the index of an allocation named "<job>.<group>[<i>]",
// or 0 when the name carries none.
func AllocIndex(name string) int {
	l := strings.LastIndexByte(name, '[')
	if l < 0 || !strings.HasSuffix(name, "]") {
		return 0
	}
	i, err := strconv.Atoi(name[l+1 : len(name)-1])
	if err != nil {
		return 0
	}
	return i
}

// HostVolumeMount is one host volume mount of a task, resolved against
// the node: what a driver bind-mounts.
type HostVolumeMount struct {
	HostPath        string
	Destination     string
	ReadOnly        bool
	PropagationMode string
}

// ResolveHostVolumeMounts returns the mounts of task t of group tg in the
// allocation named allocName on node, in volume_mount order. A mount is
// read-only when its volume_mount, the group's volume or the node's host
// volume says so. An error names a volume the node does not have (the
// scheduler placed the allocation elsewhere than it should).
func ResolveHostVolumeMounts(node *Node, tg *TaskGroup, t *Task, allocName string) ([]HostVolumeMount, error) {
	var out []HostVolumeMount
	for _, m := range t.VolumeMounts {
		if m == nil {
			continue
		}
		req := tg.Volumes[m.Volume]
		if req == nil {
			return nil, fmt.Errorf("volume_mount references undefined volume %q", m.Volume)
		}
		if req.Type != VolumeTypeHost {
			return nil, fmt.Errorf("volume %q: type %q is not supported", m.Volume, req.Type)
		}
		src := req.HostVolumeSource(AllocIndex(allocName))
		var hv *ClientHostVolumeConfig
		if node != nil {
			hv = node.HostVolumes[src]
		}
		if hv == nil {
			return nil, fmt.Errorf("volume %q: the node has no host volume %q", m.Volume, src)
		}
		out = append(out, HostVolumeMount{
			HostPath:        hv.Path,
			Destination:     m.Destination,
			ReadOnly:        m.ReadOnly || req.ReadOnly || hv.ReadOnly,
			PropagationMode: m.PropagationMode,
		})
	}
	return out, nil
}

// validateVolumes adds the problems of the group's volume blocks and its
// tasks' volume_mount blocks, in Nomad's wording where Nomad has one.
func (tg *TaskGroup) validateVolumes(p *problems) {
	names := make([]string, 0, len(tg.Volumes))
	for name := range tg.Volumes {
		names = append(names, name)
	}
	sort.Strings(names)
	canaries := tg.Update != nil && tg.Update.Canary > 0
	for _, name := range names {
		v := tg.Volumes[name]
		if v == nil {
			p.addf("volume %q is null", name)
			continue
		}
		prefix := fmt.Sprintf("volume %q: ", name)
		switch v.Type {
		case VolumeTypeHost:
		case VolumeTypeCSI:
			p.addf("%sCSI volumes are not supported by Drover", prefix)
			continue
		default:
			p.addf("%svolume has unrecognized type %q", prefix, v.Type)
			continue
		}
		if v.Source == "" {
			p.addf("%svolume has an empty source", prefix)
		}
		if v.PerAlloc && canaries {
			p.addf("%svolume cannot be per_alloc when canaries are in use", prefix)
		}
	}
	for _, t := range tg.Tasks {
		if t == nil {
			continue
		}
		for i, m := range t.VolumeMounts {
			prefix := fmt.Sprintf("task %q: ", t.Name)
			if m == nil {
				p.addf("%sVolume Mount (%d) is null", prefix, i)
				continue
			}
			switch {
			case m.Volume == "":
				p.addf("%sVolume Mount (%d) references an empty volume", prefix, i)
			case tg.Volumes[m.Volume] == nil:
				p.addf("%sVolume Mount (%d) references undefined volume %s", prefix, i, m.Volume)
			}
			if m.Destination == "" {
				p.addf("%sVolume Mount (%d) references an empty destination", prefix, i)
			}
			switch m.PropagationMode {
			case "", VolumeMountPropagationPrivate:
			case VolumeMountPropagationHostToTask, VolumeMountPropagationBidirectional:
				if t.Driver == "exec" {
					p.addf("%sVolume Mount %q: propagation_mode %q is not supported by the exec driver in Drover (its mounts are private to the task); use \"private\" or the docker driver", prefix, m.Volume, m.PropagationMode)
				}
			default:
				p.addf("%sVolume Mount %q has an invalid propagation mode: %q", prefix, m.Volume, m.PropagationMode)
			}
			if m.SELinuxLabel != "" {
				p.addf("%sVolume Mount %q: selinux_label is not supported by Drover yet", prefix, m.Volume)
			}
			if t.Driver == "raw_exec" {
				// raw_exec tasks run in the host's filesystem: nothing
				// could be mounted for them (Nomad accepts the block
				// and mounts nothing).
				p.addf("%sVolume Mount %q: the raw_exec driver has no filesystem isolation and mounts no volumes; use the host volume's path directly, or the exec or docker driver", prefix, m.Volume)
			}
		}
	}
}
