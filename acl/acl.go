package acl

import (
	"slices"
	"sort"
	"strings"
)

// ACL is the compiled, merged form of a token's policies. A nil *ACL
// allows everything: it is what requests carry when ACLs are disabled.
// ACL values are immutable and safe for concurrent use.
type ACL struct {
	management bool

	// namespaces holds the exact-name rules, globs the rules whose name has
	// a '*'; each maps to its merged capability set.
	namespaces map[string]capSet
	globs      []globRule
	// variables holds the variable path rules by namespace rule name.
	variables map[string][]*VariablesPathRule

	hostVolumes     map[string]capSet
	hostVolumeGlobs []globRule
	nodePools       map[string]string

	node, agent, operator, quota, plugin string

	// workload, when set, is the workload identity whose own variable
	// paths are granted (WithWorkload).
	workload *workload
}

type capSet map[string]struct{}

func (c capSet) has(cap string) bool {
	if _, deny := c[NamespaceCapabilityDeny]; deny {
		return false
	}
	_, ok := c[cap]
	return ok
}

func (c capSet) anyGrant() bool {
	if _, deny := c[NamespaceCapabilityDeny]; deny {
		return false
	}
	return len(c) > 0
}

// add merges caps in; a deny replaces everything.
func (c capSet) add(caps []string) {
	for _, cp := range caps {
		c[cp] = struct{}{}
	}
	if _, deny := c[NamespaceCapabilityDeny]; deny {
		clear(c)
		c[NamespaceCapabilityDeny] = struct{}{}
	}
}

type globRule struct {
	pattern string
	caps    capSet
}

// ManagementACL allows everything and reports IsManagement.
func ManagementACL() *ACL { return &ACL{management: true} }

// DenyAll allows nothing: the ACL of an anonymous request when no
// anonymous policy exists.
func DenyAll() *ACL { return mustCompile(nil) }

func mustCompile(policies []*Policy) *ACL {
	a, _ := Compile(policies)
	return a
}

// Compile merges policies into one ACL: for each namespace (or glob, or
// host volume) name the capabilities of every policy add up unless one of
// them denies; for node, agent, operator, quota and plugin the strongest
// grant wins unless one policy denies. The error is reserved for future
// rules and is nil today.
func Compile(policies []*Policy) (*ACL, error) {
	a := &ACL{
		namespaces:  map[string]capSet{},
		variables:   map[string][]*VariablesPathRule{},
		hostVolumes: map[string]capSet{},
		nodePools:   map[string]string{},
	}
	globs := map[string]capSet{}
	hvGlobs := map[string]capSet{}
	for _, p := range policies {
		if p == nil {
			continue
		}
		for _, ns := range p.Namespaces {
			target := a.namespaces
			if strings.Contains(ns.Name, "*") {
				target = globs
			}
			if target[ns.Name] == nil {
				target[ns.Name] = capSet{}
			}
			target[ns.Name].add(ns.Capabilities)
			a.variables[ns.Name] = append(a.variables[ns.Name], ns.Variables...)
		}
		for _, hv := range p.HostVolumes {
			target := a.hostVolumes
			if strings.Contains(hv.Name, "*") {
				target = hvGlobs
			}
			if target[hv.Name] == nil {
				target[hv.Name] = capSet{}
			}
			target[hv.Name].add(hv.Capabilities)
		}
		for _, np := range p.NodePools {
			a.nodePools[np.Name] = maxPolicy(a.nodePools[np.Name], np.Policy)
		}
		a.node = maxPolicy(a.node, p.Node)
		a.agent = maxPolicy(a.agent, p.Agent)
		a.operator = maxPolicy(a.operator, p.Operator)
		a.quota = maxPolicy(a.quota, p.Quota)
		a.plugin = maxPolicy(a.plugin, p.Plugin)
	}
	a.globs = sortedGlobs(globs)
	a.hostVolumeGlobs = sortedGlobs(hvGlobs)
	return a, nil
}

func sortedGlobs(m map[string]capSet) []globRule {
	out := make([]globRule, 0, len(m))
	for p, c := range m {
		out = append(out, globRule{pattern: p, caps: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pattern < out[j].pattern })
	return out
}

// policyRank orders coarse policies; deny is handled apart.
var policyRank = map[string]int{"": 0, PolicyList: 1, PolicyRead: 2, PolicyScale: 2, PolicyWrite: 3}

// maxPolicy merges two coarse policies: deny wins, else the stronger.
func maxPolicy(a, b string) string {
	if a == PolicyDeny || b == PolicyDeny {
		return PolicyDeny
	}
	if policyRank[b] > policyRank[a] {
		return b
	}
	return a
}

// IsManagement reports whether the ACL is a management token's.
func (a *ACL) IsManagement() bool { return a == nil || a.management }

// namespaceCaps returns the capability set that governs namespace ns: its
// exact rule, else the closest matching glob (the one whose wildcards cover
// the fewest characters; ties go to the lexically first pattern), else nil.
func (a *ACL) namespaceCaps(ns string) capSet {
	if c, ok := a.namespaces[ns]; ok {
		return c
	}
	return closestGlob(a.globs, ns)
}

func closestGlob(globs []globRule, name string) capSet {
	best, bestScore := capSet(nil), -1
	for _, g := range globs {
		if !globMatch(g.pattern, name) {
			continue
		}
		score := len(name) - (len(g.pattern) - strings.Count(g.pattern, "*"))
		if bestScore < 0 || score < bestScore {
			best, bestScore = g.caps, score
		}
	}
	return best
}

// AllowNamespaceOperation reports whether cap is granted in namespace ns.
func (a *ACL) AllowNamespaceOperation(ns, cap string) bool {
	if a.IsManagement() {
		return true
	}
	return a.namespaceCaps(ns).has(cap)
}

// AllowNamespace reports whether any capability is granted in ns (what
// reading the namespace itself needs).
func (a *ACL) AllowNamespace(ns string) bool {
	if a.IsManagement() {
		return true
	}
	return a.namespaceCaps(ns).anyGrant()
}

// AllowNamespaceOperationAnywhere reports whether some namespace rule (exact
// or glob) grants cap: the pre-check of requests that span namespaces
// ("*"), whose results are then filtered per namespace.
func (a *ACL) AllowNamespaceOperationAnywhere(cap string) bool {
	if a.IsManagement() {
		return true
	}
	for _, c := range a.namespaces {
		if c.has(cap) {
			return true
		}
	}
	for _, g := range a.globs {
		if g.caps.has(cap) {
			return true
		}
	}
	return false
}

// AllowVariableOperation reports whether op (read, write, list, destroy) is
// granted on variable path in namespace ns. The namespace rule that governs
// ns is chosen as for AllowNamespaceOperation; within it a rule for the
// exact path decides, else the workload's own paths (WithWorkload), else
// the closest path glob. A deny there refuses; read and write both include
// list.
func (a *ACL) AllowVariableOperation(ns, path, op string) bool {
	if a.IsManagement() {
		return true
	}
	if caps := a.namespaceCaps(ns); caps != nil && !caps.anyGrant() && len(caps) > 0 {
		return false // the namespace is denied
	}
	caps := a.variablePathCaps(ns, path)
	if caps == nil {
		return false
	}
	if _, deny := caps[VariablesCapabilityDeny]; deny {
		return false
	}
	if _, ok := caps[op]; ok {
		return true
	}
	if op == VariablesCapabilityList {
		_, read := caps[VariablesCapabilityRead]
		_, write := caps[VariablesCapabilityWrite]
		return read || write
	}
	return false
}

// variablePathCaps returns the capabilities that govern path in ns: the
// exact path rules of the namespace rule, else the workload's implicit
// ones, else the closest glob (nil: none applies).
func (a *ACL) variablePathCaps(ns, path string) capSet {
	rule := ns
	if _, ok := a.namespaces[ns]; !ok {
		rule = ""
		best := -1
		for _, g := range a.globs {
			if globMatch(g.pattern, ns) {
				score := len(ns) - (len(g.pattern) - strings.Count(g.pattern, "*"))
				if best < 0 || score < best {
					rule, best = g.pattern, score
				}
			}
		}
	}
	var paths []globRule
	exact := capSet{}
	for _, v := range a.variables[rule] {
		c := capSet{}
		for _, cp := range v.Capabilities {
			c[cp] = struct{}{}
		}
		if v.PathSpec == path {
			for cp := range c {
				exact[cp] = struct{}{}
			}
			continue
		}
		paths = append(paths, globRule{pattern: v.PathSpec, caps: c})
	}
	if len(exact) > 0 {
		return exact
	}
	if a.workload != nil && a.workload.owns(ns, path) {
		return capSet{VariablesCapabilityRead: {}, VariablesCapabilityList: {}}
	}
	return closestGlob(paths, path)
}

// workload is the identity whose implicit variable paths an ACL grants.
type workload struct{ namespace, job, group, task string }

// owns reports whether path in ns is one of the workload's own: nomad/jobs,
// nomad/jobs/<job>, nomad/jobs/<job>/<group>, nomad/jobs/<job>/<group>/<task>.
func (w *workload) owns(ns, path string) bool {
	if ns != w.namespace {
		return false
	}
	own := []string{"nomad", "jobs", w.job, w.group, w.task}
	parts := strings.Split(path, "/")
	if len(parts) < 2 || len(parts) > len(own) {
		return false
	}
	for i, p := range parts {
		if p != own[i] || p == "" {
			return false
		}
	}
	return true
}

// WithWorkload returns a copy of a that also grants read and list on the
// variables a workload owns in its namespace (Nomad's implicit workload
// policy): nomad/jobs, nomad/jobs/<job>, nomad/jobs/<job>/<group> and
// nomad/jobs/<job>/<group>/<task>. A rule for the exact path in a's own
// policies overrides it; a glob does not. A nil or management ACL is
// returned as is.
func (a *ACL) WithWorkload(namespace, job, group, task string) *ACL {
	if a.IsManagement() {
		return a
	}
	out := *a
	out.workload = &workload{namespace: namespace, job: job, group: group, task: task}
	return &out
}

// AllowHostVolumeOperation reports whether cap is granted on host volume name.
func (a *ACL) AllowHostVolumeOperation(name, cap string) bool {
	if a.IsManagement() {
		return true
	}
	if c, ok := a.hostVolumes[name]; ok {
		return c.has(cap)
	}
	return closestGlob(a.hostVolumeGlobs, name).has(cap)
}

// AllowNodePoolRead reports whether node pool name may be read.
func (a *ACL) AllowNodePoolRead(name string) bool {
	if a.IsManagement() {
		return true
	}
	p, ok := a.nodePools[name]
	if !ok {
		p = a.nodePools["*"]
	}
	return p == PolicyRead || p == PolicyWrite
}

// AllowNodePoolWrite reports whether node pool name may be written.
func (a *ACL) AllowNodePoolWrite(name string) bool {
	if a.IsManagement() {
		return true
	}
	p, ok := a.nodePools[name]
	if !ok {
		p = a.nodePools["*"]
	}
	return p == PolicyWrite
}

func allowRead(p string) bool  { return p == PolicyRead || p == PolicyWrite }
func allowWrite(p string) bool { return p == PolicyWrite }

// AllowNodeRead reports whether client nodes may be read.
func (a *ACL) AllowNodeRead() bool { return a.IsManagement() || allowRead(a.node) }

// AllowNodeWrite reports whether client nodes may be changed (drain,
// eligibility).
func (a *ACL) AllowNodeWrite() bool { return a.IsManagement() || allowWrite(a.node) }

// AllowAgentRead reports whether agent information may be read.
func (a *ACL) AllowAgentRead() bool { return a.IsManagement() || allowRead(a.agent) }

// AllowAgentWrite reports whether the agent may be changed.
func (a *ACL) AllowAgentWrite() bool { return a.IsManagement() || allowWrite(a.agent) }

// AllowOperatorRead reports whether cluster-level operator state may be read.
func (a *ACL) AllowOperatorRead() bool { return a.IsManagement() || allowRead(a.operator) }

// AllowOperatorWrite reports whether cluster-level operator state may be
// changed.
func (a *ACL) AllowOperatorWrite() bool { return a.IsManagement() || allowWrite(a.operator) }

// AllowQuotaRead reports whether quotas may be read.
func (a *ACL) AllowQuotaRead() bool { return a.IsManagement() || allowRead(a.quota) }

// AllowQuotaWrite reports whether quotas may be changed.
func (a *ACL) AllowQuotaWrite() bool { return a.IsManagement() || allowWrite(a.quota) }

// AllowPluginRead reports whether plugins may be read.
func (a *ACL) AllowPluginRead() bool { return a.IsManagement() || a.plugin == PolicyRead }

// AllowPluginList reports whether plugins may be listed.
func (a *ACL) AllowPluginList() bool {
	return a.IsManagement() || a.plugin == PolicyRead || a.plugin == PolicyList
}

// globMatch reports whether name matches pattern, where '*' matches any run
// of characters (including none).
func globMatch(pattern, name string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(name, p)
		if i < 0 {
			return false
		}
		name = name[i+len(p):]
	}
	return strings.HasSuffix(name, last)
}

// NamespaceCapabilities lists every namespace capability name (for help
// texts and validation at the edge).
func NamespaceCapabilities() []string { return slices.Clone(namespaceCapabilities) }
