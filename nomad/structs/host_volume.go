package structs

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Dynamic host volumes: a directory created on a node by a host volume
// plugin at an API request (`volume create` with type = "host"), as in
// Nomad 1.10. The server records the volume (pending), the node's client
// creates it with the plugin and reports it among its Node.HostVolumes,
// which makes it ready; groups mount it by name like a static host
// volume, in the volume's namespace only.

// Host volume states.
const (
	HostVolumeStatePending     = "pending"
	HostVolumeStateReady       = "ready"
	HostVolumeStateUnavailable = "unavailable"
)

// HostVolumePluginMkdir is the host volume plugin every Drover client has:
// it creates (and deletes) a directory under the client's host_volumes_dir.
const HostVolumePluginMkdir = "mkdir"

// Host volume access and attachment modes, as in Nomad.
const (
	HostVolumeAccessModeSingleNodeReader       = "single-node-reader-only"
	HostVolumeAccessModeSingleNodeWriter       = "single-node-writer"
	HostVolumeAccessModeSingleNodeSingleWriter = "single-node-single-writer"
	HostVolumeAccessModeSingleNodeMultiWriter  = "single-node-multi-writer"
	HostVolumeAttachmentModeFilesystem         = "file-system"
	HostVolumeAttachmentModeBlockDevice        = "block-device"
)

// HostVolume is a dynamic host volume.
type HostVolume struct {
	Namespace string
	ID        string
	Name      string
	PluginID  string
	NodePool  string
	NodeID    string
	// Constraints choose the node when NodeID is not given.
	Constraints               []*Constraint
	RequestedCapacityMinBytes int64
	RequestedCapacityMaxBytes int64
	CapacityBytes             int64
	RequestedCapabilities     []*HostVolumeCapability
	Parameters                map[string]string
	// HostPath is where the client created the volume; set when the node
	// reports it.
	HostPath    string
	State       string
	CreateIndex uint64
	CreateTime  int64
	ModifyIndex uint64
	ModifyTime  int64
}

// HostVolumeCapability is one way the volume may be mounted.
type HostVolumeCapability struct {
	AttachmentMode string
	AccessMode     string
}

// Copy returns a deep copy of v.
func (v *HostVolume) Copy() *HostVolume {
	if v == nil {
		return nil
	}
	c := *v
	c.Constraints = slices.Clone(v.Constraints)
	c.RequestedCapabilities = make([]*HostVolumeCapability, len(v.RequestedCapabilities))
	for i, cp := range v.RequestedCapabilities {
		cc := *cp
		c.RequestedCapabilities[i] = &cc
	}
	if v.Parameters != nil {
		c.Parameters = make(map[string]string, len(v.Parameters))
		for k, p := range v.Parameters {
			c.Parameters[k] = p
		}
	}
	return &c
}

// ReadOnly reports whether every capability of the volume is read-only:
// the node offers it read-only then.
func (v *HostVolume) ReadOnly() bool {
	for _, c := range v.RequestedCapabilities {
		if c.AccessMode != HostVolumeAccessModeSingleNodeReader {
			return false
		}
	}
	return len(v.RequestedCapabilities) > 0
}

// Validate returns the problems of a volume submitted for creation (its
// defaults applied), in Nomad's wording where Nomad has one.
func (v *HostVolume) Validate() error {
	var p problems
	if v.Name == "" {
		p.addf("missing name")
	}
	if v.PluginID != HostVolumePluginMkdir {
		p.addf("plugin %q is not available: Drover clients have the built-in %q plugin only", v.PluginID, HostVolumePluginMkdir)
	}
	if v.RequestedCapacityMaxBytes != 0 && v.RequestedCapacityMaxBytes < v.RequestedCapacityMinBytes {
		p.addf("capacity_max (%d) less than capacity_min (%d)", v.RequestedCapacityMaxBytes, v.RequestedCapacityMinBytes)
	}
	if len(v.RequestedCapabilities) == 0 {
		p.addf("must include at least one capability block")
	}
	for _, c := range v.RequestedCapabilities {
		if c == nil {
			p.addf("capability block is null")
			continue
		}
		switch c.AttachmentMode {
		case HostVolumeAttachmentModeFilesystem:
		case HostVolumeAttachmentModeBlockDevice:
			p.addf("capability: attachment mode %q is not supported by the %q plugin", c.AttachmentMode, HostVolumePluginMkdir)
		default:
			p.addf("capability: invalid attachment mode %q", c.AttachmentMode)
		}
		switch c.AccessMode {
		case HostVolumeAccessModeSingleNodeReader, HostVolumeAccessModeSingleNodeWriter,
			HostVolumeAccessModeSingleNodeSingleWriter, HostVolumeAccessModeSingleNodeMultiWriter:
		default:
			p.addf("capability: invalid access mode %q", c.AccessMode)
		}
	}
	for _, c := range v.Constraints {
		p.addAllWith("constraint: ", describeTarget(c), c.Validate())
	}
	for _, k := range slices.Sorted(maps.Keys(v.Parameters)) {
		val := v.Parameters[k]
		switch k {
		case "mode":
			// The client's mkdir takes the permission bits only.
			if n, err := strconv.ParseUint(val, 8, 32); err != nil || n > 0o777 {
				p.addf("parameters: mode %q must be an octal permission from 0 to 0777", val)
			}
		case "uid", "gid":
			if n, err := strconv.Atoi(val); err != nil || n < 0 {
				p.addf("parameters: %s %q must be a number from 0", k, val)
			}
		default:
			p.addf("parameters: %q is not a parameter of the %q plugin (mode, uid, gid)", k, HostVolumePluginMkdir)
		}
	}
	if len(p) > 0 {
		return &ValidationError{Problems: p}
	}
	return nil
}

// Registered reports whether v was registered (an existing directory of
// its node, HostPath, with no plugin) rather than created by a plugin
// (which always has a PluginID).
func (v *HostVolume) Registered() bool { return v.PluginID == "" && v.HostPath != "" }

// ValidateRegister returns the problems of a volume submitted for
// registration: a name, a node, an absolute host_path without "..", no
// plugin, no constraints or capacity requests (the node and directory are
// given), and the capabilities as for creation. The node's client resolves
// host_path's symlinks and offers the volume at the resolved path, which
// the volume then shows.
func (v *HostVolume) ValidateRegister() error {
	var p problems
	if v.Name == "" {
		p.addf("missing name")
	}
	if v.NodeID == "" {
		p.addf("missing node ID")
	}
	switch {
	case v.HostPath == "":
		p.addf("missing host path")
	case !path.IsAbs(v.HostPath):
		p.addf("host_path %q must be absolute", v.HostPath)
	case slices.Contains(strings.Split(v.HostPath, "/"), ".."):
		// "a/link/.." is link's target's parent on the node, not "a":
		// only the node can resolve it, and it offers the path resolved.
		p.addf("host_path %q must not contain \"..\"", v.HostPath)
	}
	if v.PluginID != "" {
		p.addf("plugin_id = %q: a registered volume is an existing directory; Drover runs no plugin for it", v.PluginID)
	}
	if len(v.Constraints) > 0 {
		p.addf("constraint: a registered volume names its node (node_id)")
	}
	if v.RequestedCapacityMinBytes != 0 || v.RequestedCapacityMaxBytes != 0 {
		p.addf("capacity_min and capacity_max are for volume create only")
	}
	if len(v.Parameters) > 0 {
		p.addf("parameters are for the plugin of volume create only")
	}
	if len(v.RequestedCapabilities) == 0 {
		p.addf("must include at least one capability block")
	}
	for _, c := range v.RequestedCapabilities {
		if c == nil {
			p.addf("capability block is null")
			continue
		}
		if c.AttachmentMode != HostVolumeAttachmentModeFilesystem {
			p.addf("capability: attachment mode %q is not supported: a registered volume is a directory (%q)", c.AttachmentMode, HostVolumeAttachmentModeFilesystem)
		}
		switch c.AccessMode {
		case HostVolumeAccessModeSingleNodeReader, HostVolumeAccessModeSingleNodeWriter,
			HostVolumeAccessModeSingleNodeSingleWriter, HostVolumeAccessModeSingleNodeMultiWriter:
		default:
			p.addf("capability: invalid access mode %q", c.AccessMode)
		}
	}
	if len(p) > 0 {
		return &ValidationError{Problems: p}
	}
	return nil
}

// Stub returns the list view of v (the fields of api.HostVolumeStub).
func (v *HostVolume) Stub() *HostVolume {
	c := *v
	c.Constraints, c.RequestedCapabilities, c.Parameters = nil, nil, nil
	return &c
}

// HostVolumeUpsertRequest (HostVolumeUpsertRequestType) writes a volume.
type HostVolumeUpsertRequest struct {
	Volume *HostVolume
}

// HostVolumeDeleteRequest (HostVolumeDeleteRequestType) deletes a volume.
type HostVolumeDeleteRequest struct {
	Namespace string
	ID        string
}

// String names v for messages.
func (v *HostVolume) String() string { return fmt.Sprintf("host volume %q (%s)", v.Name, v.ID) }
