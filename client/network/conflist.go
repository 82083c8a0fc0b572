package network

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/drover-project/drover/nomad/structs"
)

// ModeBridge is the group network mode of the client's own bridge
// network; ModeCNIPrefix starts the modes of the networks configured in
// the client's cni_config_dir ("cni/<name>").
const (
	ModeBridge    = "bridge"
	ModeCNIPrefix = "cni/"
)

// Defaults of the client's bridge settings, as in Nomad.
const (
	DefaultBridgeName   = "nomad"
	DefaultBridgeSubnet = "172.26.64.0/20"
	// AdminChain is the iptables chain the firewall plugin creates for
	// the operator's own rules; it is never flushed by Drover.
	AdminChain = "DROVER-ADMIN"
	// IfName is the allocation's interface inside its namespace.
	IfName = "eth0"
	// cniVersion is the version of the CNI spec the conflist speaks:
	// supported by every reference plugin release since 0.8 (DEL gets the
	// cached result).
	cniVersion = "0.4.0"
)

// BridgeConfig is the client's bridge network: bridge_network_name,
// bridge_network_subnet and bridge_network_hairpin_mode.
type BridgeConfig struct {
	Name        string // the bridge interface, and the CNI network's name
	Subnet      string // IPv4 CIDR the allocations' addresses come from
	HairpinMode bool   // an allocation may reach itself through a mapped host port
}

// WithDefaults fills the empty fields with Nomad's defaults.
func (c BridgeConfig) WithDefaults() BridgeConfig {
	if c.Name == "" {
		c.Name = DefaultBridgeName
	}
	if c.Subnet == "" {
		c.Subnet = DefaultBridgeSubnet
	}
	return c
}

// Validate checks the bridge name (a Linux interface name) and the subnet.
func (c BridgeConfig) Validate() error {
	if c.Name == "" || len(c.Name) > 15 || strings.ContainsAny(c.Name, "/ \t\n:") {
		return fmt.Errorf("bridge_network_name %q: must be an interface name of 1 to 15 characters without '/', ':' or blanks", c.Name)
	}
	p, err := netip.ParsePrefix(c.Subnet)
	if err != nil || !p.Addr().Is4() {
		return fmt.Errorf("bridge_network_subnet %q: must be an IPv4 CIDR such as %s", c.Subnet, DefaultBridgeSubnet)
	}
	if p.Bits() > 30 {
		return fmt.Errorf("bridge_network_subnet %q: leaves no room for allocations (at most /30)", c.Subnet)
	}
	return nil
}

// Conflist is the CNI configuration list of the bridge network: loopback
// up, a veth on the bridge with an address from host-local IPAM (the
// bridge is the gateway and masquerades outgoing traffic), the firewall
// plugin's forwarding rules, and portmap for the group's ports (with
// SNAT, so that the host reaches them on its own addresses).
func Conflist(c BridgeConfig) ([]byte, error) {
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	type obj = map[string]any
	list := obj{
		"cniVersion": cniVersion,
		"name":       c.Name,
		"plugins": []obj{
			{"type": "loopback"},
			{
				"type":         "bridge",
				"bridge":       c.Name,
				"ipMasq":       true,
				"isGateway":    true,
				"forceAddress": true,
				"hairpinMode":  c.HairpinMode,
				"ipam": obj{
					"type":   "host-local",
					"ranges": [][]obj{{{"subnet": netip.MustParsePrefix(c.Subnet).Masked().String()}}},
					"routes": []obj{{"dst": "0.0.0.0/0"}},
				},
			},
			{"type": "firewall", "backend": "iptables", "iptablesAdminChainName": AdminChain},
			{"type": "portmap", "capabilities": obj{"portMappings": true}, "snat": true},
		},
	}
	return json.MarshalIndent(list, "", "  ")
}

// RequiredPlugins are the plugin binaries Conflist uses.
var RequiredPlugins = []string{"loopback", "bridge", "host-local", "firewall", "portmap"}

// PortMapping is one entry of portmap's portMappings capability.
type PortMapping struct {
	HostPort      int    `json:"hostPort"`
	ContainerPort int    `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"`
}

// PortMappings maps each of the allocation's ports, TCP and UDP: host port
// Value (on HostIP, the address of the port's host_network, when set) to
// To inside the namespace, or to Value when To is unset or -1, as in
// Nomad. The result is sorted for stable CNI arguments.
func PortMappings(ports []structs.AllocatedPortMapping) []PortMapping {
	var out []PortMapping
	for _, p := range ports {
		if p.Value <= 0 {
			continue
		}
		to := p.To
		if to <= 0 {
			to = p.Value
		}
		for _, proto := range []string{"tcp", "udp"} {
			out = append(out, PortMapping{HostPort: p.Value, ContainerPort: to, Protocol: proto, HostIP: p.HostIP})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.HostPort != b.HostPort {
			return a.HostPort < b.HostPort
		}
		if a.HostIP != b.HostIP {
			return a.HostIP < b.HostIP
		}
		return a.Protocol < b.Protocol
	})
	return out
}

// Spec is what an allocation's namespace needs: its mode, ports, DNS,
// hostname and (cni/<name> mode) the arguments of the plugins.
type Spec struct {
	Mode     string
	Ports    []PortMapping
	DNS      *structs.DNSConfig // nil: the host's resolv.conf
	Hostname string
	CNIArgs  [][2]string // sorted by key; IgnoreUnknown first
}

// GroupSpec decides whether alloc gets a namespace of its own: when its
// group's network asks for bridge or cni/<name> mode. ok is false for host
// mode (the node's namespace) and for groups without a network block.
func GroupSpec(alloc *structs.Allocation) (spec *Spec, ok bool) {
	if alloc == nil || alloc.Job == nil {
		return nil, false
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil || len(tg.Networks) == 0 || tg.Networks[0] == nil {
		return nil, false
	}
	n := tg.Networks[0]
	if n.Mode != ModeBridge && (!strings.HasPrefix(n.Mode, ModeCNIPrefix) || n.Mode == ModeCNIPrefix) {
		return nil, false
	}
	spec = &Spec{Mode: n.Mode, DNS: n.DNS, Hostname: n.Hostname}
	if strings.HasPrefix(n.Mode, ModeCNIPrefix) && n.CNI != nil {
		spec.CNIArgs = CNIArgs(n.CNI.Args)
	}
	if alloc.AllocatedResources != nil {
		spec.Ports = PortMappings(alloc.AllocatedResources.Shared.Ports)
	}
	return spec, true
}

// CNIArgs are a cni block's arguments as CNI_ARGS pairs, sorted by key,
// after IgnoreUnknown=1 (so that plugins that do not know an argument
// ignore it rather than fail, as the reference plugins would).
func CNIArgs(args map[string]string) [][2]string {
	if len(args) == 0 {
		return nil
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		if k != "IgnoreUnknown" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	ignore := "1"
	if v, ok := args["IgnoreUnknown"]; ok {
		ignore = v
	}
	out := [][2]string{{"IgnoreUnknown", ignore}}
	for _, k := range keys {
		out = append(out, [2]string{k, args[k]})
	}
	return out
}

// ResolvConf renders a dns block as resolv.conf; nil or an empty block
// gives "" (the host's resolv.conf applies).
func ResolvConf(d *structs.DNSConfig) string {
	if d == nil || (len(d.Servers) == 0 && len(d.Searches) == 0 && len(d.Options) == 0) {
		return ""
	}
	var b strings.Builder
	b.WriteString("# written by Drover from the group's network dns block\n")
	for _, s := range d.Servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(d.Searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(d.Searches, " "))
	}
	if len(d.Options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(d.Options, " "))
	}
	return b.String()
}

// Attachment is a cached CNI attachment: the allocation (container ID)
// it belongs to and its namespace.
type Attachment struct {
	AllocID string
	NetNS   string
}

// Orphan is what an allocation no longer live on this client left:
// an attachment to delete (Attached) and, in any case, its namespace file.
type Orphan struct {
	AllocID  string
	NetNS    string
	Attached bool
}

// Orphans decides what a (re)started client removes: every cached
// attachment and every namespace file (named by allocation ID) of an
// allocation that is not live. Attachments come first, in input order,
// then namespaces without an attachment.
func Orphans(atts []Attachment, netnsFiles []string, live map[string]bool) []Orphan {
	var out []Orphan
	seen := map[string]bool{}
	for _, a := range atts {
		if live[a.AllocID] || seen[a.AllocID] {
			continue
		}
		seen[a.AllocID] = true
		out = append(out, Orphan{AllocID: a.AllocID, NetNS: a.NetNS, Attached: true})
	}
	for _, f := range netnsFiles {
		if live[f] || seen[f] {
			continue
		}
		seen[f] = true
		out = append(out, Orphan{AllocID: f})
	}
	return out
}
