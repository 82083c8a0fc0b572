package taskenv

import (
	"maps"
	"net"
	"strconv"
	"strings"

	"github.com/drover-project/drover/nomad/structs"
)

// NodeIPAttribute is the node attribute holding the node's address, used for
// ports whose mapping names no host IP.
const NodeIPAttribute = "unique.network.ip-address"

// Input is what Build needs. Alloc must have Job set; Node may be nil.
type Input struct {
	Alloc      *structs.Allocation
	Task       *structs.Task
	Node       *structs.Node
	AllocDir   string // shared alloc dir (<root>/<alloc>/alloc)
	TaskDir    string // task dir (<root>/<alloc>/<task>); local/ and secrets/ are inside
	LocalDir   string // <task dir>/local, the task's NOMAD_TASK_DIR
	SecretsDir string // <task dir>/secrets
	// HostEnv is the client's environment, less its env.denylist, for
	// tasks of drivers that run on the host's filesystem (raw_exec, exec);
	// nil for the others. Every other variable overrides it.
	HostEnv map[string]string
	// UnixAddr is the task API's address, unix://<secrets dir>/api.sock,
	// set as NOMAD_UNIX_ADDR; "" when the task has no task API socket.
	UnixAddr string
	// TemplateEnv are the variables the task's env = true templates
	// rendered; they override the task's env block (the identities'
	// NOMAD_TOKEN* are set after them).
	TemplateEnv map[string]string
	// AllocNetwork is the allocation's own namespace's status in bridge
	// mode (its address on the bridge), nil in the host's network: it
	// adds NOMAD_ALLOC_{INTERFACE,IP,PORT,ADDR}_<label>.
	AllocNetwork *structs.AllocNetworkStatus
}

// Env is a built task environment. It is immutable.
type Env struct {
	vars map[string]string // the task's environment
	node map[string]string // node references: attr.*, meta.*, node.*
}

// Build computes the task's environment.
func Build(in Input) *Env {
	e := &Env{vars: maps.Clone(in.HostEnv), node: nodeRefs(in.Node, in.Alloc)}
	if e.vars == nil {
		e.vars = map[string]string{}
	}
	e.addAlloc(in)
	e.addResources(in.Alloc, in.Task)
	e.addPorts(in.Alloc, in.Task, in.Node)
	e.addAllocPorts(in.Alloc, in.AllocNetwork)
	e.addMeta(in.Alloc, in.Task)
	if in.Task != nil {
		// The env block is interpolated against the NOMAD_* variables and
		// the node, not against itself, so the order of keys never matters.
		base := &Env{vars: maps.Clone(e.vars), node: e.node}
		for k, v := range in.Task.Env {
			e.vars[k] = base.Replace(v)
		}
	}
	maps.Copy(e.vars, in.TemplateEnv)
	e.addIdentities(in.Alloc, in.Task)
	return e
}

// With returns a copy of e whose variables vars override (node
// references are kept).
func (e *Env) With(vars map[string]string) *Env {
	out := &Env{vars: maps.Clone(e.vars), node: e.node}
	maps.Copy(out.vars, vars)
	return out
}

// addIdentities exposes the task's signed workload identities that ask for
// it (env = true): NOMAD_TOKEN for the default one, NOMAD_TOKEN_<name> for
// named ones. They are set last, so the env block cannot shadow them.
func (e *Env) addIdentities(a *structs.Allocation, t *structs.Task) {
	if a == nil || t == nil {
		return
	}
	for _, wi := range t.AllIdentities() {
		if tok := a.SignedIdentities[structs.IdentityKey(t.Name, wi)]; wi.Env && tok != "" {
			e.vars[wi.EnvVar()] = tok
		}
	}
}

// Map returns a copy of the environment variables.
func (e *Env) Map() map[string]string { return maps.Clone(e.vars) }

// Get returns a variable of the environment.
func (e *Env) Get(key string) (string, bool) {
	v, ok := e.vars[key]
	return v, ok
}

func (e *Env) addAlloc(in Input) {
	a := in.Alloc
	if a == nil {
		return
	}
	set := func(k, v string) { e.vars[k] = v }
	set("NOMAD_ALLOC_ID", a.ID)
	set("NOMAD_SHORT_ALLOC_ID", shortID(a.ID))
	set("NOMAD_ALLOC_NAME", a.Name)
	set("NOMAD_ALLOC_INDEX", strconv.Itoa(AllocIndex(a.Name)))
	set("NOMAD_ALLOC_DIR", in.AllocDir)
	set("NOMAD_TASK_DIR", in.LocalDir)
	set("NOMAD_SECRETS_DIR", in.SecretsDir)
	if in.UnixAddr != "" {
		set("NOMAD_UNIX_ADDR", in.UnixAddr)
	}
	set("NOMAD_GROUP_NAME", a.TaskGroup)
	set("NOMAD_NAMESPACE", a.Namespace)
	if in.Task != nil {
		set("NOMAD_TASK_NAME", in.Task.Name)
	}
	if in.Node != nil {
		set("NOMAD_DC", in.Node.Datacenter)
	}
	if j := a.Job; j != nil {
		set("NOMAD_JOB_ID", j.ID)
		set("NOMAD_JOB_NAME", j.Name)
		set("NOMAD_REGION", j.Region)
		if j.ParentID != "" {
			set("NOMAD_JOB_PARENT_ID", j.ParentID)
		}
		if a.Namespace == "" {
			set("NOMAD_NAMESPACE", j.Namespace)
		}
	}
}

func (e *Env) addResources(a *structs.Allocation, t *structs.Task) {
	if t == nil {
		return
	}
	cpu, mem, memMax := 0, 0, 0
	if t.Resources != nil {
		cpu, mem, memMax = t.Resources.CPU, t.Resources.MemoryMB, t.Resources.MemoryMaxMB
	}
	if a != nil && a.AllocatedResources != nil {
		if r := a.AllocatedResources.Tasks[t.Name]; r != nil {
			cpu, mem, memMax = int(r.Cpu.CpuShares), int(r.Memory.MemoryMB), int(r.Memory.MemoryMaxMB)
		}
	}
	e.vars["NOMAD_CPU_LIMIT"] = strconv.Itoa(cpu)
	e.vars["NOMAD_MEMORY_LIMIT"] = strconv.Itoa(mem)
	if memMax > 0 {
		e.vars["NOMAD_MEMORY_MAX_LIMIT"] = strconv.Itoa(memMax)
	}
}

// addPorts adds the group's ports and those of the task's own (legacy,
// task-level resources { network }) network. NOMAD_PORT_ is the port the
// task listens on (To when mapped, else the host port); the HOST_ variants
// and ADDR are the host side.
func (e *Env) addPorts(a *structs.Allocation, t *structs.Task, n *structs.Node) {
	if a == nil || a.AllocatedResources == nil {
		return
	}
	fallbackIP := "127.0.0.1"
	if n != nil && n.Attributes[NodeIPAttribute] != "" {
		fallbackIP = n.Attributes[NodeIPAttribute]
	}
	for _, p := range a.AllocatedResources.Shared.Ports {
		e.addPort(p.Label, p.HostIP, fallbackIP, p.Value, p.To)
	}
	if t == nil {
		return
	}
	if tr := a.AllocatedResources.Tasks[t.Name]; tr != nil {
		for _, nw := range tr.Networks {
			if nw == nil {
				continue
			}
			for _, ports := range [][]structs.Port{nw.ReservedPorts, nw.DynamicPorts} {
				for _, p := range ports {
					e.addPort(p.Label, nw.IP, fallbackIP, p.Value, p.To)
				}
			}
		}
	}
}

// addPort adds the variables of one port: host port value on ip (else
// fallbackIP), listened on at to when it is set.
func (e *Env) addPort(label, ip, fallbackIP string, value, to int) {
	label = CleanKey(label)
	if ip == "" {
		ip = fallbackIP
	}
	host := strconv.Itoa(value)
	port := host
	if to > 0 {
		port = strconv.Itoa(to)
	}
	e.vars["NOMAD_IP_"+label] = ip
	e.vars["NOMAD_HOST_IP_"+label] = ip
	e.vars["NOMAD_PORT_"+label] = port
	e.vars["NOMAD_HOST_PORT_"+label] = host
	e.vars["NOMAD_ADDR_"+label] = net.JoinHostPort(ip, host)
	e.vars["NOMAD_HOST_ADDR_"+label] = net.JoinHostPort(ip, host)
}

// addAllocPorts adds, for an allocation with a namespace of its own, each
// port's address inside it: the interface, the allocation's IP and the
// port the task listens on (To, else the host port), as in Nomad.
func (e *Env) addAllocPorts(a *structs.Allocation, ns *structs.AllocNetworkStatus) {
	if a == nil || a.AllocatedResources == nil || ns == nil || ns.Address == "" {
		return
	}
	for _, p := range a.AllocatedResources.Shared.Ports {
		label := CleanKey(p.Label)
		port := p.Value
		if p.To > 0 {
			port = p.To
		}
		e.vars["NOMAD_ALLOC_INTERFACE_"+label] = ns.InterfaceName
		e.vars["NOMAD_ALLOC_IP_"+label] = ns.Address
		e.vars["NOMAD_ALLOC_PORT_"+label] = strconv.Itoa(port)
		e.vars["NOMAD_ALLOC_ADDR_"+label] = net.JoinHostPort(ns.Address, strconv.Itoa(port))
	}
}

// addMeta adds job, group and task meta (the most specific wins) under the
// key as written and upper-cased.
func (e *Env) addMeta(a *structs.Allocation, t *structs.Task) {
	meta := map[string]string{}
	if a != nil && a.Job != nil {
		maps.Copy(meta, a.Job.Meta)
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
			maps.Copy(meta, tg.Meta)
		}
	}
	if t != nil {
		maps.Copy(meta, t.Meta)
	}
	for k, v := range meta {
		key := CleanKey(k)
		e.vars["NOMAD_META_"+key] = v
		e.vars["NOMAD_META_"+strings.ToUpper(key)] = v
	}
}

// nodeRefs returns the node references of interpolation.
func nodeRefs(n *structs.Node, a *structs.Allocation) map[string]string {
	refs := map[string]string{}
	if a != nil && a.Job != nil {
		refs["node.region"] = a.Job.Region
	}
	if n == nil {
		return refs
	}
	refs["node.unique.id"] = n.ID
	refs["node.unique.name"] = n.Name
	refs["node.datacenter"] = n.Datacenter
	refs["node.class"] = n.NodeClass
	refs["node.pool"] = n.NodePool
	for k, v := range n.Attributes {
		refs["attr."+k] = v
	}
	for k, v := range n.Meta {
		refs["meta."+k] = v
	}
	return refs
}

// AllocIndex returns the index of an allocation name "<job>.<group>[<n>]",
// or 0 when the name has none.
func AllocIndex(name string) int {
	open := strings.LastIndexByte(name, '[')
	if open < 0 || !strings.HasSuffix(name, "]") {
		return 0
	}
	n, err := strconv.Atoi(name[open+1 : len(name)-1])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// CleanKey replaces every character of key other than ASCII letters, digits
// and '_' by '_', so it can be part of an environment variable name.
func CleanKey(key string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		}
		return '_'
	}, key)
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
