package network

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func TestConflist(t *testing.T) {
	cases := []struct {
		name    string
		cfg     BridgeConfig
		bridge  string
		subnet  string
		hairpin bool
		err     string
	}{
		{name: "defaults as in Nomad", bridge: "nomad", subnet: "172.26.64.0/20"},
		{name: "custom", cfg: BridgeConfig{Name: "br-apps", Subnet: "10.9.0.0/24", HairpinMode: true}, bridge: "br-apps", subnet: "10.9.0.0/24", hairpin: true},
		{name: "subnet given by a host address is masked", cfg: BridgeConfig{Subnet: "10.9.0.7/24"}, bridge: "nomad", subnet: "10.9.0.0/24"},
		{name: "name too long", cfg: BridgeConfig{Name: "a-very-long-bridge-name"}, err: "bridge_network_name"},
		{name: "name with a slash", cfg: BridgeConfig{Name: "a/b"}, err: "bridge_network_name"},
		{name: "not a CIDR", cfg: BridgeConfig{Subnet: "10.0.0.1"}, err: "bridge_network_subnet"},
		{name: "IPv6 subnet", cfg: BridgeConfig{Subnet: "fd00::/64"}, err: "IPv4"},
		{name: "no room", cfg: BridgeConfig{Subnet: "10.0.0.0/31"}, err: "no room"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := Conflist(tc.cfg)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			var list struct {
				CNIVersion string           `json:"cniVersion"`
				Name       string           `json:"name"`
				Plugins    []map[string]any `json:"plugins"`
			}
			require.NoError(t, json.Unmarshal(raw, &list))
			require.Equal(t, tc.bridge, list.Name)
			var types []string
			for _, p := range list.Plugins {
				types = append(types, p["type"].(string))
			}
			require.Equal(t, []string{"loopback", "bridge", "firewall", "portmap"}, types)
			br := list.Plugins[1]
			require.Equal(t, tc.bridge, br["bridge"])
			require.Equal(t, true, br["ipMasq"])
			require.Equal(t, true, br["isGateway"])
			require.Equal(t, tc.hairpin, br["hairpinMode"])
			ipam := br["ipam"].(map[string]any)
			require.Equal(t, "host-local", ipam["type"])
			require.Equal(t, tc.subnet, ipam["ranges"].([]any)[0].([]any)[0].(map[string]any)["subnet"])
			require.Equal(t, AdminChain, list.Plugins[2]["iptablesAdminChainName"])
			require.Equal(t, map[string]any{"portMappings": true}, list.Plugins[3]["capabilities"])
			require.Equal(t, true, list.Plugins[3]["snat"])
		})
	}
}

func TestPortMappings(t *testing.T) {
	cases := []struct {
		name  string
		ports []structs.AllocatedPortMapping
		want  []PortMapping
	}{
		{name: "none"},
		{name: "to maps the port inside", ports: []structs.AllocatedPortMapping{{Label: "http", Value: 25000, To: 8080}},
			want: []PortMapping{{25000, 8080, "tcp", ""}, {25000, 8080, "udp", ""}}},
		{name: "no to maps the same port", ports: []structs.AllocatedPortMapping{{Label: "a", Value: 9000}},
			want: []PortMapping{{9000, 9000, "tcp", ""}, {9000, 9000, "udp", ""}}},
		{name: "to = -1 maps the same port", ports: []structs.AllocatedPortMapping{{Label: "a", Value: 9001, To: -1}},
			want: []PortMapping{{9001, 9001, "tcp", ""}, {9001, 9001, "udp", ""}}},
		{name: "host_network address kept, sorted by host port", ports: []structs.AllocatedPortMapping{
			{Label: "b", Value: 30000, To: 80, HostIP: "10.0.0.5"}, {Label: "a", Value: 20000, To: 81},
		}, want: []PortMapping{
			{20000, 81, "tcp", ""}, {20000, 81, "udp", ""}, {30000, 80, "tcp", "10.0.0.5"}, {30000, 80, "udp", "10.0.0.5"},
		}},
		{name: "unassigned port skipped", ports: []structs.AllocatedPortMapping{{Label: "x", To: 80}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, PortMappings(tc.ports))
		})
	}
}

func TestGroupSpec(t *testing.T) {
	alloc := func(nets ...*structs.NetworkResource) *structs.Allocation {
		return &structs.Allocation{
			ID: "a1", TaskGroup: "g",
			Job: &structs.Job{TaskGroups: []*structs.TaskGroup{{Name: "g", Networks: nets}}},
			AllocatedResources: &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
				Ports: []structs.AllocatedPortMapping{{Label: "http", Value: 25000, To: 8080}},
			}},
		}
	}
	dns := &structs.DNSConfig{Servers: []string{"10.0.0.2"}}
	cases := []struct {
		name  string
		alloc *structs.Allocation
		ok    bool
		want  *Spec
	}{
		{name: "no network block", alloc: alloc()},
		{name: "host mode", alloc: alloc(&structs.NetworkResource{Mode: "host"})},
		{name: "default mode is host", alloc: alloc(&structs.NetworkResource{})},
		{name: "bridge", alloc: alloc(&structs.NetworkResource{Mode: "bridge", Hostname: "web", DNS: dns}), ok: true,
			want: &Spec{Mode: "bridge", Hostname: "web", DNS: dns, Ports: []PortMapping{{25000, 8080, "tcp", ""}, {25000, 8080, "udp", ""}}}},
		{name: "cni network with args", alloc: alloc(&structs.NetworkResource{Mode: "cni/mynet", CNI: &structs.CNIConfig{Args: map[string]string{"b": "2", "a": "1"}}}), ok: true,
			want: &Spec{Mode: "cni/mynet", CNIArgs: [][2]string{{"IgnoreUnknown", "1"}, {"a", "1"}, {"b", "2"}},
				Ports: []PortMapping{{25000, 8080, "tcp", ""}, {25000, 8080, "udp", ""}}}},
		{name: "cni args are for cni modes only", alloc: alloc(&structs.NetworkResource{Mode: "bridge", CNI: &structs.CNIConfig{Args: map[string]string{"a": "1"}}}), ok: true,
			want: &Spec{Mode: "bridge", Ports: []PortMapping{{25000, 8080, "tcp", ""}, {25000, 8080, "udp", ""}}}},
		{name: "cni mode without a name", alloc: alloc(&structs.NetworkResource{Mode: "cni/"})},
		{name: "none mode", alloc: alloc(&structs.NetworkResource{Mode: "none"})},
		{name: "no job", alloc: &structs.Allocation{ID: "a1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec, ok := GroupSpec(tc.alloc)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, spec)
		})
	}
}

func TestCNIArgs(t *testing.T) {
	require.Nil(t, CNIArgs(nil))
	require.Equal(t, [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAME", "x"}, {"a", "b"}}, CNIArgs(map[string]string{"a": "b", "K8S_POD_NAME": "x"}))
	require.Equal(t, [][2]string{{"IgnoreUnknown", "false"}, {"a", "b"}}, CNIArgs(map[string]string{"a": "b", "IgnoreUnknown": "false"}), "the job's own IgnoreUnknown wins")
}

func TestResolvConf(t *testing.T) {
	require.Empty(t, ResolvConf(nil))
	require.Empty(t, ResolvConf(&structs.DNSConfig{}))
	require.Equal(t, "# written by Drover from the group's network dns block\n"+
		"nameserver 10.0.0.2\nnameserver 1.1.1.1\nsearch service.consul example\noptions ndots:2 edns0\n",
		ResolvConf(&structs.DNSConfig{
			Servers: []string{"10.0.0.2", "1.1.1.1"}, Searches: []string{"service.consul", "example"}, Options: []string{"ndots:2", "edns0"},
		}))
}

func TestOrphans(t *testing.T) {
	cases := []struct {
		name  string
		atts  []Attachment
		files []string
		live  map[string]bool
		want  []Orphan
	}{
		{name: "nothing"},
		{name: "live allocations keep theirs",
			atts: []Attachment{{AllocID: "a", NetNS: "/d/netns/a"}}, files: []string{"a"}, live: map[string]bool{"a": true}},
		{name: "a gone allocation's attachment and namespace",
			atts: []Attachment{{AllocID: "a", NetNS: "/d/netns/a"}, {AllocID: "b", NetNS: "/d/netns/b"}}, files: []string{"a", "b"},
			live: map[string]bool{"a": true},
			want: []Orphan{{AllocID: "b", NetNS: "/d/netns/b", Attached: true}}},
		{name: "a namespace without attachment (killed between create and ADD)",
			files: []string{"c"}, want: []Orphan{{AllocID: "c"}}},
		{name: "an attachment whose namespace file is gone",
			atts: []Attachment{{AllocID: "d", NetNS: "/d/netns/d"}}, want: []Orphan{{AllocID: "d", NetNS: "/d/netns/d", Attached: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Orphans(tc.atts, tc.files, tc.live))
		})
	}
}
