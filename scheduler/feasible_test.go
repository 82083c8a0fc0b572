package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func feasibilityNode() *structs.Node {
	n := testNode("node-1", inDC("us-east-1"), inPool("edge"))
	n.ID = "11111111-2222"
	n.NodeClass = "large"
	n.Attributes = map[string]string{
		"kernel.name": "linux", "cpu.numcores": "8", "os.version": "22.04", "nomad.version": "1.11.2",
		"docker.version": "27.1.0-beta.2", "features": "avx, sse4,aes", "unique.hostname": "host-1", "empty": "",
	}
	n.Meta = map[string]string{"rack": "r1", "zone": "b"}
	return n
}

func TestConstraintOperators(t *testing.T) {
	node := feasibilityNode()
	cases := []struct {
		l, op, r string
		want     bool
	}{
		// Equality and its aliases; unset attributes never equal.
		{"${attr.kernel.name}", "=", "linux", true},
		{"${attr.kernel.name}", "==", "linux", true},
		{"${attr.kernel.name}", "is", "windows", false},
		{"${attr.missing}", "=", "linux", false},
		{"${attr.empty}", "=", "", true},
		{"${attr.kernel.name}", "!=", "windows", true},
		{"${attr.kernel.name}", "not", "linux", false},
		{"${attr.missing}", "!=", "linux", true},
		// Order: numeric when both sides are numbers, lexical otherwise.
		{"${attr.cpu.numcores}", ">", "4", true},
		{"${attr.cpu.numcores}", ">=", "8", true},
		{"${attr.cpu.numcores}", "<", "10", true}, // lexically "8" > "10"
		{"${attr.cpu.numcores}", "<=", "7", false},
		{"${attr.os.version}", ">", "9.5", true}, // floats
		{"${meta.zone}", ">", "a", true},         // lexical
		{"${meta.zone}", "<", "a", false},
		{"${attr.missing}", "<", "10", false},
		// Regular expressions.
		{"${attr.unique.hostname}", "regexp", "^host-[0-9]+$", true},
		{"${attr.unique.hostname}", "regexp", "^web", false},
		{"${attr.unique.hostname}", "regexp", "([", false}, // does not compile
		{"${attr.missing}", "regexp", ".*", false},
		// version: go-version style constraints.
		{"${attr.nomad.version}", "version", ">= 1.10, < 2", true},
		{"${attr.nomad.version}", "version", "~> 1.11", true},
		{"${attr.nomad.version}", "version", "~> 1.10.0", false},
		{"${attr.nomad.version}", "version", "1.11.2", true},
		{"${attr.nomad.version}", "version", "!= 1.11.2", false},
		{"${attr.os.version}", "version", "> 22.4", false},     // 22.04 == 22.4.0
		{"${attr.docker.version}", "version", ">= 1.0", false}, // pre-release needs a pre-release term
		{"${attr.docker.version}", "version", ">= 27.1.0-beta.1", true},
		{"${attr.kernel.name}", "version", ">= 1", false},   // not a version
		{"${attr.nomad.version}", "version", ">= x", false}, // bad constraint
		// semver: strict, pre-releases ordered by precedence.
		{"${attr.docker.version}", "semver", ">= 1.0.0", true},
		{"${attr.docker.version}", "semver", "< 27.1.0", true},
		{"${attr.docker.version}", "semver", "> 27.1.0-beta.10", false},
		{"${attr.docker.version}", "semver", "> 27.1.0-beta", true},
		{"${attr.os.version}", "semver", ">= 1.0.0", false}, // "22.04" is not semver
		{"${attr.nomad.version}", "semver", "~> 1.11.0", false},
		// Sets.
		{"${attr.features}", "set_contains", "avx,aes", true},
		{"${attr.features}", "set_contains_all", "avx, sse4", true},
		{"${attr.features}", "set_contains", "avx,neon", false},
		{"${attr.features}", "set_contains_any", "neon, aes", true},
		{"${attr.features}", "set_contains_any", "neon,sve", false},
		{"${attr.missing}", "set_contains_any", "aes", false},
		// Presence.
		{"${attr.kernel.name}", "is_set", "", true},
		{"${attr.missing}", "is_set", "", false},
		{"${meta.missing}", "is_not_set", "", true},
		{"${meta.rack}", "is_not_set", "", false},
		// Trivial for system jobs.
		{"", "distinct_hosts", "", true},
		{"${meta.rack}", "distinct_property", "1", true},
		// Unknown operators never hold.
		{"${meta.rack}", "like", "r1", false},
	}
	for _, tc := range cases {
		c := &structs.Constraint{LTarget: tc.l, Operand: tc.op, RTarget: tc.r}
		t.Run(constraintString(c), func(t *testing.T) {
			require.Equal(t, tc.want, newConstraintChecker().meets(node, c))
		})
	}
}

func TestConstraintTargets(t *testing.T) {
	node := feasibilityNode()
	cases := []struct {
		target, want string
		ok           bool
	}{
		{"${node.unique.id}", "11111111-2222", true},
		{"${node.unique.name}", "node-1", true},
		{"${node.datacenter}", "us-east-1", true},
		{"${node.class}", "large", true},
		{"${node.pool}", "edge", true},
		{"${attr.kernel.name}", "linux", true},
		{"${meta.rack}", "r1", true},
		{"${meta.nope}", "", false},
		{"${attr.nope}", "", false},
		{"${node.region}", "", false},
		{"literal", "literal", true},
		{"", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.target, func(t *testing.T) {
			got, ok := resolveTarget(tc.target, node)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
	t.Run("targets on both sides", func(t *testing.T) {
		c := &structs.Constraint{LTarget: "${node.unique.name}", Operand: "=", RTarget: "${attr.unique.hostname}"}
		require.False(t, newConstraintChecker().meets(node, c))
		c.RTarget = "${node.unique.name}"
		require.True(t, newConstraintChecker().meets(node, c))
	})
}

func TestFeasibleFunc(t *testing.T) {
	job := testJob("web")
	job.Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}}
	job.TaskGroups[0].Constraints = []*structs.Constraint{{LTarget: "${meta.rack}", Operand: "=", RTarget: "r1"}}
	job.TaskGroups[0].Tasks[0].Constraints = []*structs.Constraint{{LTarget: "${node.class}", Operand: "!=", RTarget: "tiny"}}
	feasible := NewFeasibleFunc(job)
	tg := job.TaskGroups[0]
	withMeta := func(k, v string) nodeOpt { return func(n *structs.Node) { n.Meta = map[string]string{k: v} } }
	cases := []struct {
		name   string
		node   *structs.Node
		ok     bool
		reason string
	}{
		{"all met", testNode("a", withMeta("rack", "r1")), true, ""},
		{"job constraint", testNode("a", withMeta("rack", "r1"), withAttr("kernel.name", "windows")), false, "${attr.kernel.name} = linux"},
		{"group constraint", testNode("a", withMeta("rack", "r2")), false, "${meta.rack} = r1"},
		{"task constraint", testNode("a", withMeta("rack", "r1"), func(n *structs.Node) { n.NodeClass = "tiny" }), false, "${node.class} != tiny"},
		{"driver undetected", testNode("a", withMeta("rack", "r1"), func(n *structs.Node) {
			n.Drivers = map[string]*structs.DriverInfo{"raw_exec": {Detected: false, Healthy: true}}
		}), false, ReasonMissingDrivers},
		{"driver unhealthy", testNode("a", withMeta("rack", "r1"), func(n *structs.Node) {
			n.Drivers = map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: false}}
		}), false, ReasonMissingDrivers},
		{"driver by attribute", testNode("a", withMeta("rack", "r1"), withAttr("driver.raw_exec", "1"), func(n *structs.Node) {
			n.Drivers = nil
		}), true, ""},
		{"driver attribute false", testNode("a", withMeta("rack", "r1"), withAttr("driver.raw_exec", "0"), func(n *structs.Node) {
			n.Drivers = nil
		}), false, ReasonMissingDrivers},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason := feasible(tc.node, tg)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.reason, reason)
		})
	}
}

func TestDatacenterAndPool(t *testing.T) {
	require.True(t, DatacenterMatches([]string{"dc1"}, "dc1"))
	require.False(t, DatacenterMatches([]string{"dc1"}, "dc2"))
	require.True(t, DatacenterMatches([]string{"dc2", "us-*"}, "us-west-2"))
	require.True(t, DatacenterMatches([]string{"*"}, "anything"))
	require.False(t, DatacenterMatches([]string{"us-?"}, "us-10"))
	require.True(t, DatacenterMatches(nil, "dc1"))

	require.True(t, PoolMatches("all", "gpu"))
	require.True(t, PoolMatches("default", ""))
	require.True(t, PoolMatches("", "default"))
	require.True(t, PoolMatches("gpu", "gpu"))
	require.False(t, PoolMatches("gpu", "default"))
	require.False(t, PoolMatches("default", "all"))
}

func TestParseVersion(t *testing.T) {
	cases := []struct {
		in     string
		strict bool
		ok     bool
	}{
		{"1", false, true}, {"v1.2", false, true}, {"1.2.3.4", false, true}, {"1.2.3-rc.1+build.5", false, true},
		{"1.2.3beta1", false, true}, {"1.2.3-", false, false}, {"x1", false, false}, {"1..2", false, false},
		{"1.2.3", true, true}, {"1.2.3-rc.1+b", true, true}, {"1.2", true, false}, {"v1.2.3", true, false},
		{"1.2.3beta", true, false}, {"1.2.3+", true, false},
	}
	for _, tc := range cases {
		_, ok := parseVersion(tc.in, tc.strict)
		require.Equal(t, tc.ok, ok, "parseVersion(%q, strict=%v)", tc.in, tc.strict)
	}
	order := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1"}
	for i := 1; i < len(order); i++ {
		a, _ := parseVersion(order[i-1], false)
		b, _ := parseVersion(order[i], false)
		require.Equal(t, -1, a.compare(b), "%s < %s", order[i-1], order[i])
		require.Equal(t, 1, b.compare(a), "%s > %s", order[i], order[i-1])
	}
}
