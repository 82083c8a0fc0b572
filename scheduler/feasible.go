package scheduler

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/drover-project/drover/nomad/structs"
)

// ReasonMissingDrivers is the ConstraintFiltered key of nodes that lack a
// healthy driver for one of the group's tasks (Nomad's wording).
const ReasonMissingDrivers = "missing drivers"

// ReasonMissingNetwork is the ConstraintFiltered key of nodes that do not
// offer the group's network mode (Nomad's wording).
const ReasonMissingNetwork = "missing network"

// FeasibleFunc reports whether node may run tg, judging only the node and the
// group (constraints, drivers): not datacenters, pools, readiness or
// resources. When it may not, reason names the first failing check: the
// constraint as "<ltarget> <operand> <rtarget>" or ReasonMissingDrivers.
type FeasibleFunc func(node *structs.Node, tg *structs.TaskGroup) (ok bool, reason string)

// DatacenterMatches reports whether dc matches one of patterns. Patterns are
// globs ("*", "us-*"), as in Nomad. No patterns match every datacenter (a
// canonical job always names some).
func DatacenterMatches(patterns []string, dc string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, dc); ok {
			return true
		}
	}
	return false
}

// PoolMatches reports whether a job in jobPool may run on a node in
// nodePool. Pool "all" matches every node; an empty pool means "default".
func PoolMatches(jobPool, nodePool string) bool {
	if jobPool == "all" {
		return true
	}
	return orDefaultPool(jobPool) == orDefaultPool(nodePool)
}

func orDefaultPool(p string) string {
	if p == "" {
		return "default"
	}
	return p
}

// NewFeasibleFunc returns the FeasibleFunc of job: job, group and task
// constraints, a detected and healthy driver for every task, then the
// group's host volumes (see HostVolumesMet). The per_alloc volumes of
// system and sysbatch jobs are checked for index 0, the index of all their
// allocations; those of other jobs depend on the allocation and are left
// to the caller.
//
// The returned function memoizes compiled regular expressions and version
// constraints; it is deterministic but not safe for concurrent use.
func NewFeasibleFunc(job *structs.Job) FeasibleFunc {
	c := newConstraintChecker()
	system := job.Type == structs.JobTypeSystem || job.Type == structs.JobTypeSysBatch
	return func(node *structs.Node, tg *structs.TaskGroup) (bool, string) {
		if con := c.firstUnmet(node, job.Constraints); con != nil {
			return false, constraintString(con)
		}
		if con := c.firstUnmet(node, tg.Constraints); con != nil {
			return false, constraintString(con)
		}
		for _, t := range tg.Tasks {
			if con := c.firstUnmet(node, t.Constraints); con != nil {
				return false, constraintString(con)
			}
		}
		if !DriversHealthy(node, tg) {
			return false, ReasonMissingDrivers
		}
		if !HostVolumesMet(node, tg, job.Namespace, 0, system) {
			return false, ReasonMissingHostVolumes
		}
		if !NetworkModeOffered(node, tg) {
			return false, ReasonMissingNetwork
		}
		if network, port, ok := HostNetworksOffered(node, tg); !ok {
			return false, MissingHostNetwork(network, port)
		}
		return true, ""
	}
}

// NetworkModeOffered reports whether node offers the network mode of tg's
// network: the host's network ("" or "host") is everywhere; any other mode
// ("bridge") only on nodes that advertise it in NodeResources.Networks.
func NetworkModeOffered(node *structs.Node, tg *structs.TaskGroup) bool {
	if len(tg.Networks) == 0 || tg.Networks[0] == nil {
		return true
	}
	mode := tg.Networks[0].Mode
	if mode == "" || mode == "host" {
		return true
	}
	for _, n := range node.NodeResources.Networks {
		if n != nil && n.Mode == mode {
			return true
		}
	}
	return false
}

// HostNetworksOffered reports whether node has the host network of every
// port of tg's networks (group and task ones) that names one other than
// the default; when it does not, network and port name the first missing.
func HostNetworksOffered(node *structs.Node, tg *structs.TaskGroup) (network, port string, ok bool) {
	check := func(nets []*structs.NetworkResource) (string, string, bool) {
		for _, nw := range nets {
			if nw == nil {
				continue
			}
			for _, ports := range [2][]structs.Port{nw.ReservedPorts, nw.DynamicPorts} {
				for _, p := range ports {
					if structs.IsDefaultHostNetwork(p.HostNetwork) {
						continue
					}
					if _, _, has := node.HostNetworkAddress(p.HostNetwork); !has {
						return p.HostNetwork, p.Label, false
					}
				}
			}
		}
		return "", "", true
	}
	if network, port, ok = check(tg.Networks); !ok {
		return network, port, false
	}
	for _, t := range tg.Tasks {
		if t.Resources != nil {
			if network, port, ok = check(t.Resources.Networks); !ok {
				return network, port, false
			}
		}
	}
	return "", "", true
}

// constraintString names a constraint the way AllocationMetric keys do.
func constraintString(c *structs.Constraint) string {
	return fmt.Sprintf("%s %s %s", c.LTarget, c.Operand, c.RTarget)
}

// DriversHealthy reports whether node has every task's driver detected and
// healthy. A node that fingerprinted no DriverInfo for a driver may still
// advertise it with the attribute "driver.<name>" = "1"/"true".
func DriversHealthy(node *structs.Node, tg *structs.TaskGroup) bool {
	for _, t := range tg.Tasks {
		if info, ok := node.Drivers[t.Driver]; ok {
			if info == nil || !info.Detected || !info.Healthy {
				return false
			}
			continue
		}
		if ok, _ := strconv.ParseBool(node.Attributes["driver."+t.Driver]); !ok {
			return false
		}
	}
	return true
}

// constraintChecker evaluates constraints against nodes, memoizing parsed
// right-hand sides. Not safe for concurrent use.
type constraintChecker struct {
	regexps  map[string]*regexp.Regexp // nil value: does not compile
	versions map[string]versionConstraint
}

func newConstraintChecker() *constraintChecker {
	return &constraintChecker{regexps: map[string]*regexp.Regexp{}, versions: map[string]versionConstraint{}}
}

// firstUnmet returns the first constraint node does not meet, or nil.
func (c *constraintChecker) firstUnmet(node *structs.Node, cons []*structs.Constraint) *structs.Constraint {
	for _, con := range cons {
		if con != nil && !c.meets(node, con) {
			return con
		}
	}
	return nil
}

// meets reports whether node meets con.
func (c *constraintChecker) meets(node *structs.Node, con *structs.Constraint) bool {
	l, lok := resolveTarget(con.LTarget, node)
	r, rok := resolveTarget(con.RTarget, node)
	return c.check(con.Operand, l, lok, r, rok)
}

// check applies operand to the resolved targets; lok/rok report whether each
// side resolved (an unset attribute does not).
//
// Invariants: only "!=", "not", "is_not_set" and the distinct_* operators can
// hold when a side is unset; an unknown operand never holds.
func (c *constraintChecker) check(operand, l string, lok bool, r string, rok bool) bool {
	both := lok && rok
	switch operand {
	case "=", "==", "is":
		return both && l == r
	case "!=", "not":
		return lok != rok || l != r
	case "<", "<=", ">", ">=":
		return both && checkOrder(operand, l, r)
	case structs.ConstraintRegex:
		re := c.regexp(r)
		return both && re != nil && re.MatchString(l)
	case structs.ConstraintVersion, structs.ConstraintSemver:
		vc := c.version(operand, r)
		return both && vc.check(l)
	case structs.ConstraintSetContains, structs.ConstraintSetContainsAll:
		return both && setContains(l, r, true /* all */)
	case structs.ConstraintSetContainsAny:
		return both && setContains(l, r, false /* all */)
	case structs.ConstraintAttributeIsSet:
		return lok
	case structs.ConstraintAttributeNotSet:
		return !lok
	case structs.ConstraintDistinctHosts, structs.ConstraintDistinctProperty:
		// Assumptions: a system job runs at most one allocation of a group
		// per node, so distinct_hosts always holds. distinct_property is
		// not enforced for system jobs yet (accepted like affinities).
		return true
	}
	return false
}

func (c *constraintChecker) regexp(expr string) *regexp.Regexp {
	re, ok := c.regexps[expr]
	if !ok {
		re, _ = regexp.Compile(expr) // validation rejects bad ones; nil never matches
		c.regexps[expr] = re
	}
	return re
}

func (c *constraintChecker) version(operand, expr string) versionConstraint {
	key := operand + "\x00" + expr
	vc, ok := c.versions[key]
	if !ok {
		vc = parseVersionConstraint(expr, operand == structs.ConstraintSemver)
		c.versions[key] = vc
	}
	return vc
}

// resolveTarget interpolates a constraint target against node. Literals
// resolve to themselves; ${attr.X}, ${meta.X} and the ${node.*} fields to
// the node's value. ok is false for unset attributes, meta keys and unknown
// interpolations.
func resolveTarget(target string, node *structs.Node) (value string, ok bool) {
	if !strings.HasPrefix(target, "${") || !strings.HasSuffix(target, "}") {
		return target, true
	}
	key := target[2 : len(target)-1]
	switch key {
	case "node.unique.id":
		return node.ID, true
	case "node.unique.name":
		return node.Name, true
	case "node.datacenter":
		return node.Datacenter, true
	case "node.class":
		return node.NodeClass, true
	case "node.pool":
		return orDefaultPool(node.NodePool), true
	}
	if name, found := strings.CutPrefix(key, "attr."); found {
		value, ok = node.Attributes[name]
		return value, ok
	}
	if name, found := strings.CutPrefix(key, "meta."); found {
		value, ok = node.Meta[name]
		return value, ok
	}
	return "", false
}

// checkOrder compares l and r with operand: numerically when both parse as
// numbers, lexically otherwise.
func checkOrder(operand, l, r string) bool {
	var cmp int
	li, lerr := strconv.ParseInt(l, 10, 64)
	ri, rerr := strconv.ParseInt(r, 10, 64)
	lf, lferr := strconv.ParseFloat(l, 64)
	rf, rferr := strconv.ParseFloat(r, 64)
	switch {
	case lerr == nil && rerr == nil:
		cmp = compareOrdered(li, ri)
	case lferr == nil && rferr == nil:
		cmp = compareOrdered(lf, rf)
	default:
		cmp = strings.Compare(l, r)
	}
	switch operand {
	case "<":
		return cmp < 0
	case "<=":
		return cmp <= 0
	case ">":
		return cmp > 0
	default: // ">="
		return cmp >= 0
	}
}

func compareOrdered[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// setContains reports whether the comma-separated set have contains all (or,
// when all is false, any) of the comma-separated values want.
func setContains(have, want string, all bool) bool {
	set := map[string]bool{}
	for _, v := range strings.Split(have, ",") {
		set[strings.TrimSpace(v)] = true
	}
	for _, v := range strings.Split(want, ",") {
		in := set[strings.TrimSpace(v)]
		if all && !in {
			return false
		}
		if !all && in {
			return true
		}
	}
	return all
}
