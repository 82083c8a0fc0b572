package nomad

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/scheduler"
)

// HostVolumePluginAttr is the node attribute a client sets for each host
// volume plugin it has ("plugins.host_volume.<id>.version"), as in Nomad.
func HostVolumePluginAttr(pluginID string) string {
	return "plugins.host_volume." + pluginID + ".version"
}

// HostVolumeCreate creates a dynamic host volume: it checks the caller
// (host-volume-create in the volume's namespace) and the volume, chooses
// its node (NodeID, else a ready node of NodePool meeting the constraints
// that has the plugin and no volume of that name) and writes it pending.
// The node's client creates it and reports it, which makes it ready (see
// the state's node upsert). It must run on the leader.
func (s *Server) HostVolumeCreate(caller *acl.ACL, v *structs.HostVolume) (*structs.HostVolume, uint64, error) {
	return s.writeNewHostVolume(caller, v, newHostVolume{
		verb: "create", capability: acl.NamespaceCapabilityHostVolumeCreate,
		check: func(v *structs.HostVolume) error {
			if v.PluginID == "" {
				v.PluginID = structs.HostVolumePluginMkdir
			}
			return v.Validate()
		},
		place: func(snap *state.Snapshot, v *structs.HostVolume) error {
			node, err := chooseHostVolumeNode(snap, v)
			if err != nil {
				return err
			}
			v.NodeID, v.NodePool = node.ID, node.NodePool
			v.HostPath, v.CapacityBytes = "", 0 // the client reports them
			return nil
		},
	})
}

// HostVolumeRegister registers an existing directory of a node as a
// dynamic host volume, as `volume register` does in Nomad 1.10: the caller
// needs host-volume-register in the volume's namespace; the volume names
// its node (NodeID) and directory (HostPath, absolute) and has no plugin.
// It is written pending; the node's client offers it once it finds the
// directory there, which makes it ready. Deleting it later leaves the
// directory alone. It must run on the leader.
func (s *Server) HostVolumeRegister(caller *acl.ACL, v *structs.HostVolume) (*structs.HostVolume, uint64, error) {
	return s.writeNewHostVolume(caller, v, newHostVolume{
		verb: "register", capability: acl.NamespaceCapabilityHostVolumeRegister,
		check: (*structs.HostVolume).ValidateRegister,
		place: func(snap *state.Snapshot, v *structs.HostVolume) error {
			node, err := snap.NodeByID(nil, v.NodeID)
			if err != nil {
				return err
			}
			if node == nil {
				return structs.BadRequestf("node %q does not exist", v.NodeID)
			}
			if why := hostVolumeNameTaken(snap, node, v.Name); why != "" {
				return structs.BadRequestf("node %q %s", node.ID, why)
			}
			v.NodePool = node.NodePool
			return nil
		},
	})
}

// newHostVolume is what differs between creating and registering a host
// volume (writeNewHostVolume).
type newHostVolume struct {
	verb       string // "create" or "register", for the caller's next step
	capability string // the caller needs it in the volume's namespace
	// check fills the volume's defaults and returns its problems.
	check func(*structs.HostVolume) error
	// place sets the volume's node (NodeID, NodePool) from snap, or
	// returns why it has none.
	place func(*state.Snapshot, *structs.HostVolume) error
}

// writeNewHostVolume checks a new host volume (a copy of v: its namespace
// defaulted, the caller's capability there, no ID since updates are not
// built, how.check, an existing namespace), places it (how.place), gives
// it an ID and writes it pending, and returns it as written.
func (s *Server) writeNewHostVolume(caller *acl.ACL, v *structs.HostVolume, how newHostVolume) (*structs.HostVolume, uint64, error) {
	if v == nil {
		return nil, 0, structs.BadRequestf("missing volume definition")
	}
	v = v.Copy()
	if v.Namespace == "" {
		v.Namespace = structs.DefaultNamespace
	}
	if !caller.AllowNamespaceOperation(v.Namespace, how.capability) {
		return nil, 0, structs.ErrPermissionDenied
	}
	if v.ID != "" {
		return nil, 0, structs.BadRequestf("volume ID %q is set: updating a host volume is not supported by Drover yet; delete it and %s it again", v.ID, how.verb)
	}
	if err := how.check(v); err != nil {
		return nil, 0, err
	}
	snap := s.State().Snapshot()
	if ns, err := snap.NamespaceByName(nil, v.Namespace); err != nil {
		return nil, 0, err
	} else if ns == nil {
		return nil, 0, structs.BadRequestf("namespace %q does not exist", v.Namespace)
	}
	if err := how.place(snap, v); err != nil {
		return nil, 0, err
	}
	now := s.now().UnixNano()
	v.ID, v.State = generateUUID(), structs.HostVolumeStatePending
	v.CreateTime, v.ModifyTime = now, now
	_, index, err := s.raftApply(structs.HostVolumeUpsertRequestType, &structs.HostVolumeUpsertRequest{Volume: v})
	if err != nil {
		return nil, 0, err
	}
	out, err := s.State().HostVolumeByID(nil, v.Namespace, v.ID)
	if err != nil {
		return nil, 0, err
	}
	return out, index, nil
}

// hostVolumeNameTaken says why node cannot have another host volume named
// name ("" when it can): a static one or a dynamic one has it.
func hostVolumeNameTaken(snap *state.Snapshot, node *structs.Node, name string) string {
	if node.HostVolumes[name] != nil {
		return fmt.Sprintf("already has a host volume named %q", name)
	}
	vols, err := snap.HostVolumesByNode(nil, node.ID)
	if err != nil {
		return err.Error()
	}
	for _, p := range vols {
		if p.Name == name {
			return fmt.Sprintf("already has a host volume named %q", name)
		}
	}
	return ""
}

// chooseHostVolumeNode returns the node v goes to, or why there is none.
// Among the nodes that fit, the one with the fewest dynamic host volumes
// is chosen (then the lowest ID).
func chooseHostVolumeNode(snap *state.Snapshot, v *structs.HostVolume) (*structs.Node, error) {
	nodes, err := snap.Nodes(nil)
	if err != nil {
		return nil, err
	}
	placed, err := snap.HostVolumes(nil, "*")
	if err != nil {
		return nil, err
	}
	count := map[string]int{}
	for _, p := range placed {
		count[p.NodeID]++
	}
	feasible := scheduler.NewFeasibleFunc(&structs.Job{Constraints: v.Constraints})
	fits := func(n *structs.Node) string {
		switch {
		case !n.Ready():
			return "is not ready"
		case v.NodePool != "" && n.NodePool != v.NodePool:
			return fmt.Sprintf("is not in node pool %q", v.NodePool)
		case n.Attributes[HostVolumePluginAttr(v.PluginID)] == "":
			return fmt.Sprintf("has no host volume plugin %q", v.PluginID)
		case n.HostVolumes[v.Name] != nil:
			return fmt.Sprintf("already has a host volume named %q", v.Name)
		}
		for _, p := range placed {
			if p.NodeID == n.ID && p.Name == v.Name {
				return fmt.Sprintf("already has a host volume named %q", v.Name)
			}
		}
		if ok, why := feasible(n, &structs.TaskGroup{}); !ok {
			return "does not meet constraint " + why
		}
		return ""
	}
	if v.NodeID != "" {
		for _, n := range nodes {
			if n.ID == v.NodeID {
				if why := fits(n); why != "" {
					return nil, structs.BadRequestf("node %q %s", n.ID, why)
				}
				return n, nil
			}
		}
		return nil, structs.BadRequestf("node %q does not exist", v.NodeID)
	}
	var ok []*structs.Node
	reasons := map[string]int{}
	for _, n := range nodes {
		if why := fits(n); why != "" {
			reasons[why]++
			continue
		}
		ok = append(ok, n)
	}
	if len(ok) == 0 {
		var parts []string
		for why, c := range reasons {
			parts = append(parts, fmt.Sprintf("%d %s", c, why))
		}
		sort.Strings(parts)
		return nil, structs.BadRequestf("no node meets the volume's requirements (nodes: %s)", orNone(strings.Join(parts, "; ")))
	}
	sort.Slice(ok, func(i, j int) bool {
		if count[ok[i].ID] != count[ok[j].ID] {
			return count[ok[i].ID] < count[ok[j].ID]
		}
		return ok[i].ID < ok[j].ID
	})
	return ok[0], nil
}

func orNone(s string) string {
	if s == "" {
		return "none registered"
	}
	return s
}

// HostVolumeDelete deletes the volume (ns, id): the caller needs
// host-volume-delete; a volume that allocations still use (not
// client-terminal, on its node, of a group asking for its name in its
// namespace) is refused. The node's client then removes the directory.
func (s *Server) HostVolumeDelete(caller *acl.ACL, ns, id string) (uint64, error) {
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	if !caller.AllowNamespaceOperation(ns, acl.NamespaceCapabilityHostVolumeDelete) {
		return 0, structs.ErrPermissionDenied
	}
	snap := s.State().Snapshot()
	v, err := snap.HostVolumeByID(nil, ns, id)
	if err != nil {
		return 0, err
	}
	if v == nil {
		return 0, structs.NotFoundf("volume not found")
	}
	users, err := hostVolumeUsers(nil, snap, v)
	if err != nil {
		return 0, err
	}
	if len(users) > 0 {
		ids := make([]string, len(users))
		for i, a := range users {
			ids[i] = a.ID
		}
		return 0, structs.BadRequestf("volume %s in use by allocations: %v", v.ID, ids)
	}
	_, index, err := s.raftApply(structs.HostVolumeDeleteRequestType, &structs.HostVolumeDeleteRequest{Namespace: ns, ID: id})
	return index, err
}

func groupUsesHostVolume(tg *structs.TaskGroup, name, allocName string) bool {
	for _, req := range tg.Volumes {
		if req != nil && req.Type == structs.VolumeTypeHost && req.HostVolumeSource(structs.AllocIndex(allocName)) == name {
			return true
		}
	}
	return false
}

// HostVolumeGet is the volume (opts' namespace, id) as a blocking query,
// with the allocations that use it (not client-terminal, on its node, of
// a group asking for its name in its namespace); the caller needs
// host-volume-read. A missing volume is a not-found error.
func (s *Server) HostVolumeGet(ctx context.Context, opts QueryOptions, id string) (*structs.HostVolume, []*structs.Allocation, QueryMeta, error) {
	if !opts.ACL.AllowNamespaceOperation(opts.namespace(), acl.NamespaceCapabilityHostVolumeRead) {
		return nil, nil, s.refusedMeta(), structs.ErrPermissionDenied
	}
	var out *structs.HostVolume
	var users []*structs.Allocation
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		v, err := snap.HostVolumeByID(ws, opts.namespace(), id)
		out, users = v, nil
		if err != nil || v == nil {
			return snap.Index(state.TableHostVolumes), err
		}
		if users, err = hostVolumeUsers(ws, snap, v); err != nil {
			return 0, err
		}
		return max(snap.Index(state.TableHostVolumes), snap.Index(state.TableAllocs)), nil
	})
	if err == nil && out == nil {
		err = structs.NotFoundf("volume not found")
	}
	return out, users, meta, err
}

// hostVolumeUsers returns the allocations that use v, by ID.
func hostVolumeUsers(ws memdb.WatchSet, snap *state.Snapshot, v *structs.HostVolume) ([]*structs.Allocation, error) {
	allocs, err := snap.AllocsByNode(ws, v.NodeID)
	if err != nil {
		return nil, err
	}
	var out []*structs.Allocation
	for _, a := range allocs {
		if a.ClientTerminal() || a.Namespace != v.Namespace || a.Job == nil {
			continue
		}
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil && groupUsesHostVolume(tg, v.Name, a.Name) {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// HostVolumeList lists the volumes of opts' namespace ("*": those of
// every namespace the caller may read volumes in), narrowed to a node or
// node pool when given, as a blocking query.
func (s *Server) HostVolumeList(ctx context.Context, opts QueryOptions, nodeID, nodePool string) ([]*structs.HostVolume, QueryMeta, error) {
	var out []*structs.HostVolume
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		all, err := snap.HostVolumes(ws, opts.namespace())
		if err != nil {
			return 0, err
		}
		out = out[:0]
		for _, v := range all {
			if !opts.ACL.AllowNamespaceOperation(v.Namespace, acl.NamespaceCapabilityHostVolumeRead) ||
				(nodeID != "" && v.NodeID != nodeID) || (nodePool != "" && v.NodePool != nodePool) ||
				(opts.Prefix != "" && !strings.HasPrefix(v.ID, opts.Prefix)) {
				continue
			}
			out = append(out, v.Stub())
		}
		return snap.Index(state.TableHostVolumes), nil
	})
	return out, s.listIndex(meta, state.TableHostVolumes), err
}

// NodeHostVolumes is the node's blocking query for the dynamic host
// volumes placed on it (every namespace): what its client must have
// created.
func (s *Server) NodeHostVolumes(ctx context.Context, caller NodeCaller, opts QueryOptions) ([]*structs.HostVolume, QueryMeta, error) {
	if _, err := s.authenticateNode(caller); err != nil {
		return nil, QueryMeta{}, err
	}
	nodeID := caller.NodeID
	var out []*structs.HostVolume
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		vols, err := snap.HostVolumesByNode(ws, nodeID)
		out = vols
		return snap.Index(state.TableHostVolumes), err
	})
	return out, meta, err
}
