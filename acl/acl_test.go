package acl

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func compile(t *testing.T, docs ...string) *ACL {
	t.Helper()
	var ps []*Policy
	for _, d := range docs {
		p, err := Parse(d)
		require.NoError(t, err, d)
		ps = append(ps, p)
	}
	a, err := Compile(ps)
	require.NoError(t, err)
	return a
}

func TestParse_Errors(t *testing.T) {
	cases := []struct {
		name, doc string
		want      []string // substrings of the error
	}{
		{"empty", "  ", []string{"policy is empty"}},
		{"bad hcl", `namespace "default" {`, []string{"Unclosed"}},
		{"bad namespace policy", `namespace "default" { policy = "admin" }`,
			[]string{`namespace "default" rule: invalid policy "admin"`}},
		{"bad capability", `namespace "default" { capabilities = ["read-job", "fly"] }`,
			[]string{`invalid capability "fly"`}},
		{"bad node policy", `node { policy = "scale" }`, []string{`node rule: invalid policy "scale"`}},
		{"node without policy", `node { }`, []string{`Missing required argument`}},
		{"plugin write", `plugin { policy = "write" }`, []string{`plugin rule: invalid policy "write"`}},
		{"unknown block", `nodes { policy = "read" }`, []string{`Unsupported block type`}},
		{"unknown attribute", `namespace "x" { polcy = "read" }`, []string{`Unsupported argument`}},
		{"empty namespace rule", `namespace "x" { }`, []string{`namespace "x" rule: needs a policy or capabilities`}},
		{"bad namespace name", `namespace "a/b" { policy = "read" }`, []string{`invalid namespace name "a/b"`}},
		{"duplicate", "agent { policy = \"read\" }\nagent { policy = \"write\" }", []string{"duplicate agent rule"}},
		{"capabilities not a list", `namespace "x" { capabilities = "read-job" }`, []string{"capabilities must be a list of strings"}},
		{"bad variable capability", `namespace "x" {
  variables {
    path "*" { capabilities = ["own"] }
  }
}`,
			[]string{`variables path "*": invalid capability "own"`}},
		{"bad host volume capability", `host_volume "v" { capabilities = ["mount"] }`, []string{`invalid capability "mount"`}},
		{"two problems", `namespace "a" { policy = "x" }
operator { policy = "y" }`, []string{`invalid policy "x"`, `invalid policy "y"`}},
		{"bad json", `{"namespace": {"default": {"policy": "own"}}}`, []string{`invalid policy "own"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.doc)
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestParse_Valid(t *testing.T) {
	p, err := Parse(`
namespace "default" {
  policy       = "read"
  capabilities = ["submit-job"]
  variables {
    path "app/*" { capabilities = ["read", "list"] }
  }
}
namespace "prod-*" { policy = "deny" }
node     { policy = "read" }
agent    { policy = "write" }
operator { policy = "read" }
quota    { policy = "deny" }
plugin   { policy = "list" }
host_volume "data" { policy = "read" }
node_pool "gpu" { policy = "write" }
`)
	require.NoError(t, err)
	require.Len(t, p.Namespaces, 2)
	require.Equal(t, "default", p.Namespaces[0].Name)
	require.Contains(t, p.Namespaces[0].Capabilities, NamespaceCapabilityReadJob)
	require.Contains(t, p.Namespaces[0].Capabilities, NamespaceCapabilitySubmitJob)
	require.NotContains(t, p.Namespaces[0].Capabilities, NamespaceCapabilityReadLogs)
	require.Equal(t, []string{NamespaceCapabilityDeny}, p.Namespaces[1].Capabilities)
	require.Equal(t, "read", p.Node)
	require.Equal(t, "write", p.Agent)
	require.Equal(t, "read", p.Operator)
	require.Equal(t, "deny", p.Quota)
	require.Equal(t, "list", p.Plugin)
	require.Equal(t, []string{HostVolumeCapabilityMountReadOnly}, p.HostVolumes[0].Capabilities)
	require.Equal(t, "write", p.NodePools[0].Policy)
	require.Len(t, p.Namespaces[0].Variables, 1)

	// The JSON form parses to the same policy.
	j, err := Parse(`{"namespace": {"default": {"policy": "read", "capabilities": ["submit-job"]}}, "node": {"policy": "read"}}`)
	require.NoError(t, err)
	require.Equal(t, p.Namespaces[0].Capabilities, j.Namespaces[0].Capabilities)
	require.Equal(t, "read", j.Node)
}

func TestExpandNamespacePolicy(t *testing.T) {
	cases := []struct {
		policy  string
		has     []string
		hasNot  []string
		isEmpty bool
	}{
		{policy: "read", has: []string{"list-jobs", "read-job", "parse-job", "read-job-scaling"},
			hasNot: []string{"submit-job", "read-logs", "scale-job", "alloc-exec"}},
		{policy: "write", has: []string{"list-jobs", "read-job", "submit-job", "dispatch-job", "read-logs",
			"read-fs", "alloc-exec", "alloc-lifecycle", "scale-job"}, hasNot: []string{"alloc-node-exec", "deny"}},
		{policy: "scale", has: []string{"scale-job", "read-job-scaling", "list-scaling-policies"},
			hasNot: []string{"read-job", "submit-job"}},
		{policy: "deny", has: []string{"deny"}, hasNot: []string{"read-job"}},
		{policy: "", isEmpty: true},
	}
	for _, tc := range cases {
		t.Run(tc.policy, func(t *testing.T) {
			got := expandNamespacePolicy(tc.policy)
			if tc.isEmpty {
				require.Empty(t, got)
			}
			for _, c := range tc.has {
				require.Contains(t, got, c)
			}
			for _, c := range tc.hasNot {
				require.NotContains(t, got, c)
			}
		})
	}
}

func TestACL_Namespaces(t *testing.T) {
	type check struct {
		ns, cap string
		want    bool
	}
	cases := []struct {
		name   string
		docs   []string
		checks []check
	}{
		{"read only", []string{`namespace "default" { policy = "read" }`}, []check{
			{"default", "read-job", true}, {"default", "list-jobs", true},
			{"default", "submit-job", false}, {"other", "read-job", false},
		}},
		{"write", []string{`namespace "a" { policy = "write" }`}, []check{
			{"a", "submit-job", true}, {"a", "read-logs", true}, {"b", "submit-job", false},
		}},
		{"fine grained added to coarse", []string{`namespace "a" {
  policy = "read"
  capabilities = ["submit-job"]
}`}, []check{{"a", "submit-job", true}, {"a", "read-logs", false}, {"a", "read-job", true}}},
		{"merge adds", []string{`namespace "a" { policy = "read" }`, `namespace "a" { capabilities = ["read-logs"] }`}, []check{
			{"a", "read-job", true}, {"a", "read-logs", true}, {"a", "submit-job", false},
		}},
		{"deny wins over write in another policy", []string{`namespace "a" { policy = "write" }`, `namespace "a" { policy = "deny" }`}, []check{
			{"a", "read-job", false}, {"a", "submit-job", false},
		}},
		{"deny capability wins", []string{`namespace "a" { capabilities = ["read-job", "deny"] }`}, []check{
			{"a", "read-job", false},
		}},
		{"glob", []string{`namespace "*" { policy = "read" }`}, []check{
			{"default", "read-job", true}, {"anything", "read-job", true}, {"anything", "submit-job", false},
		}},
		{"exact beats glob", []string{`namespace "*" { policy = "write" }`, `namespace "prod" { policy = "read" }`}, []check{
			{"prod", "submit-job", false}, {"prod", "read-job", true}, {"dev", "submit-job", true},
		}},
		{"closest glob wins", []string{`namespace "*" { policy = "deny" }`, `namespace "prod-*" { policy = "write" }`, `namespace "prod-web*" { policy = "read" }`}, []check{
			{"prod-api", "submit-job", true}, {"prod-web1", "submit-job", false}, {"prod-web1", "read-job", true},
			{"dev", "read-job", false},
		}},
		{"no policies", nil, []check{{"default", "read-job", false}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := compile(t, tc.docs...)
			require.False(t, a.IsManagement())
			for _, c := range tc.checks {
				require.Equal(t, c.want, a.AllowNamespaceOperation(c.ns, c.cap), "%s %s", c.ns, c.cap)
			}
		})
	}
}

func TestACL_AllowNamespaceAndAnywhere(t *testing.T) {
	a := compile(t, `namespace "a" { policy = "read" }`, `namespace "b" { policy = "deny" }`, `namespace "c-*" { capabilities = ["submit-job"] }`)
	require.True(t, a.AllowNamespace("a"))
	require.False(t, a.AllowNamespace("b"))
	require.True(t, a.AllowNamespace("c-1"))
	require.False(t, a.AllowNamespace("d"))
	require.True(t, a.AllowNamespaceOperationAnywhere("read-job"))
	require.True(t, a.AllowNamespaceOperationAnywhere("submit-job"))
	require.False(t, a.AllowNamespaceOperationAnywhere("read-logs"))
	require.False(t, DenyAll().AllowNamespaceOperationAnywhere("list-jobs"))
}

func TestACL_CoarseAreas(t *testing.T) {
	cases := []struct {
		name                   string
		docs                   []string
		nodeR, nodeW           bool
		agentR, agentW         bool
		operatorR, operatorW   bool
		pluginList, pluginRead bool
	}{
		{name: "none"},
		{name: "read", docs: []string{`node { policy = "read" }
agent { policy = "read" }
operator { policy = "read" }
plugin { policy = "read" }`}, nodeR: true, agentR: true, operatorR: true, pluginList: true, pluginRead: true},
		{name: "write", docs: []string{`node { policy = "write" }
agent { policy = "write" }
operator { policy = "write" }
plugin { policy = "list" }`}, nodeR: true, nodeW: true, agentR: true, agentW: true, operatorR: true, operatorW: true, pluginList: true},
		{name: "strongest wins", docs: []string{`node { policy = "read" }`, `node { policy = "write" }`}, nodeR: true, nodeW: true},
		{name: "deny wins", docs: []string{`node { policy = "write" }`, `node { policy = "deny" }`,
			`operator { policy = "write" }`}, operatorR: true, operatorW: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := compile(t, tc.docs...)
			require.Equal(t, tc.nodeR, a.AllowNodeRead(), "node read")
			require.Equal(t, tc.nodeW, a.AllowNodeWrite(), "node write")
			require.Equal(t, tc.agentR, a.AllowAgentRead(), "agent read")
			require.Equal(t, tc.agentW, a.AllowAgentWrite(), "agent write")
			require.Equal(t, tc.operatorR, a.AllowOperatorRead(), "operator read")
			require.Equal(t, tc.operatorW, a.AllowOperatorWrite(), "operator write")
			require.Equal(t, tc.pluginList, a.AllowPluginList(), "plugin list")
			require.Equal(t, tc.pluginRead, a.AllowPluginRead(), "plugin read")
		})
	}
}

func TestACL_ManagementAndNil(t *testing.T) {
	for name, a := range map[string]*ACL{"management": ManagementACL(), "nil (ACLs off)": nil} {
		t.Run(name, func(t *testing.T) {
			require.True(t, a.IsManagement())
			require.True(t, a.AllowNamespaceOperation("x", "submit-job"))
			require.True(t, a.AllowNodeWrite())
			require.True(t, a.AllowOperatorWrite())
			require.True(t, a.AllowAgentWrite())
			require.True(t, a.AllowVariableOperation("x", "a/b", "write"))
		})
	}
	d := DenyAll()
	require.False(t, d.IsManagement())
	require.False(t, d.AllowNodeRead())
	require.False(t, d.AllowAgentRead())
	require.False(t, d.AllowNamespace("default"))
}

func TestACL_Variables(t *testing.T) {
	a := compile(t, `namespace "default" {
  variables {
    path "*"       { capabilities = ["read", "list"] }
    path "secret/*" { capabilities = ["deny"] }
    path "app/db"  { capabilities = ["write", "read"] }
  }
}
namespace "denied" { policy = "deny" }`)
	cases := []struct {
		ns, path, op string
		want         bool
	}{
		{"default", "app/web", "read", true},
		{"default", "app/web", "write", false},
		{"default", "app/db", "write", true},
		{"default", "secret/x", "read", false},
		{"other", "app/web", "read", false},
		{"denied", "app/web", "read", false},
	}
	for _, c := range cases {
		require.Equal(t, c.want, a.AllowVariableOperation(c.ns, c.path, c.op), "%s %s %s", c.ns, c.path, c.op)
	}
}

func TestACL_HostVolumesAndNodePools(t *testing.T) {
	a := compile(t, `host_volume "data-*" { policy = "write" }
host_volume "data-ro" { policy = "read" }
node_pool "gpu" { policy = "read" }`)
	require.True(t, a.AllowHostVolumeOperation("data-x", "mount-readwrite"))
	require.False(t, a.AllowHostVolumeOperation("data-ro", "mount-readwrite"))
	require.True(t, a.AllowHostVolumeOperation("data-ro", "mount-readonly"))
	require.False(t, a.AllowHostVolumeOperation("logs", "mount-readonly"))
	require.True(t, a.AllowNodePoolRead("gpu"))
	require.False(t, a.AllowNodePoolWrite("gpu"))
	require.False(t, a.AllowNodePoolRead("default"))
}

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*", "abc", true}, {"a*", "bac", false},
		{"*c", "abc", true}, {"a*c", "ac", true}, {"a*c", "abd", false}, {"a*b*c", "axbyc", true},
		{"a*b*c", "acb", false}, {"ab*ba", "aba", false}, {"abc", "abc", true}, {"abc", "abcd", false},
	}
	for _, c := range cases {
		require.Equal(t, c.want, globMatch(c.pattern, c.name), "%s ~ %s", c.pattern, c.name)
	}
}

func TestNamespaceCapabilitiesAreParseable(t *testing.T) {
	doc := `namespace "x" { capabilities = ["` + strings.Join(NamespaceCapabilities(), `", "`) + `"] }`
	_, err := Parse(doc)
	require.NoError(t, err)
}
