package structs

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Host networks (a client's host_network "name" blocks): named addresses
// of the node a port may ask for with host_network = "name". The client
// resolves each to one address of the host and advertises it in
// NodeResources.NodeNetworks under the network's name (its alias); the
// scheduler places such a port only on nodes with that alias and maps it
// on the alias's address.

// HostNetworkDefault is the host network of ports that name none: the
// node's own address.
const HostNetworkDefault = "default"

// ClientHostNetworkConfig is one host_network block as the client has it
// configured (api.HostNetworkInfo).
type ClientHostNetworkConfig struct {
	Name          string
	CIDR          string
	Interface     string
	ReservedPorts string
}

// NodeNetworkResource is one interface of the node with the addresses
// host networks resolved to on it.
type NodeNetworkResource struct {
	Mode      string // "host"
	Device    string
	Addresses []NodeNetworkAddress
}

// NodeNetworkAddress is one address of a NodeNetworkResource: Alias is the
// host network it serves, ReservedPorts the ports no allocation may take
// on it (besides the node's reserved ports).
type NodeNetworkAddress struct {
	Family        string // "ipv4" or "ipv6"
	Alias         string
	Address       string
	ReservedPorts string
}

// HostNetworkAddress returns the address the node advertises for host
// network alias and that network's reserved ports; ok is false when the
// node has no such network. The default network is not looked up here
// (the scheduler maps it on the node's own address).
func (n *Node) HostNetworkAddress(alias string) (addr, reserved string, ok bool) {
	for _, nw := range n.NodeResources.NodeNetworks {
		if nw == nil {
			continue
		}
		for i := range nw.Addresses {
			if a := &nw.Addresses[i]; a.Alias == alias {
				return a.Address, a.ReservedPorts, true
			}
		}
	}
	return "", "", false
}

// IsDefaultHostNetwork reports whether a port's host_network means the
// node's own address ("" or "default").
func IsDefaultHostNetwork(name string) bool {
	return name == "" || name == HostNetworkDefault
}

// NodeAddressAttribute is the node attribute holding the node's own
// address (the client's fingerprint).
const NodeAddressAttribute = "unique.network.ip-address"

// AnyAddress is the HostPort address of the node's reserved ports
// (reserved.reserved_ports): they are taken on every address.
const AnyAddress = "*"

// HostPort is a port on one address of a node. Ports are taken per
// address: the same port on two addresses of a node is two ports.
type HostPort struct {
	Addr string
	Port int
}

// DefaultAddress is the address ports of the default host network are
// taken on, for collisions: the node's first network address, else its
// fingerprinted address attribute ("" when it has neither).
func (n *Node) DefaultAddress() string {
	for _, nw := range n.NodeResources.Networks {
		if nw != nil && nw.IP != "" {
			return nw.IP
		}
	}
	return n.Attributes[NodeAddressAttribute]
}

// PortAddress is the address a port on host network hostNetwork is taken
// on: that network's address, else ip (the address an allocation recorded
// for it) when set, else def (the node's DefaultAddress).
func (n *Node) PortAddress(hostNetwork, ip, def string) string {
	if !IsDefaultHostNetwork(hostNetwork) {
		if a, _, ok := n.HostNetworkAddress(hostNetwork); ok {
			return a
		}
	}
	if ip != "" {
		return ip
	}
	return def
}

// EachReservedPort calls fn for each port the node keeps from allocations:
// its reserved ports on AnyAddress and each host network's reserved ports
// on that network's address. Malformed parts of a list are skipped (node
// registration validates them).
func (n *Node) EachReservedPort(fn func(HostPort)) {
	EachPortOf(n.ReservedResources.Networks.ReservedHostPorts, func(p int) { fn(HostPort{AnyAddress, p}) })
	for _, nw := range n.NodeResources.NodeNetworks {
		if nw == nil {
			continue
		}
		for _, a := range nw.Addresses {
			EachPortOf(a.ReservedPorts, func(p int) { fn(HostPort{a.Address, p}) })
		}
	}
}

// EachPortOf calls fn for each port of a list such as "22,80,8000-8002",
// without allocating; malformed parts are skipped.
func EachPortOf(spec string, fn func(int)) {
	for spec != "" {
		part, rest, _ := strings.Cut(spec, ",")
		spec = rest
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a {
				continue
			}
		}
		for p := a; p <= b; p++ {
			fn(p)
		}
	}
}

// ValidateNodeNetworks checks the host network addresses a node registers
// with: each has an alias other than the default, an address that parses,
// a valid reserved port list, and no alias is given twice.
func ValidateNodeNetworks(nets []*NodeNetworkResource) error {
	seen := map[string]bool{}
	for i, nw := range nets {
		if nw == nil {
			return BadRequestf("NodeResources.NodeNetworks[%d] is null", i)
		}
		for j, a := range nw.Addresses {
			field := fmt.Sprintf("NodeResources.NodeNetworks[%d].Addresses[%d]", i, j)
			switch {
			case IsDefaultHostNetwork(a.Alias):
				return BadRequestf("%s: alias %q names no host network", field, a.Alias)
			case seen[a.Alias]:
				return BadRequestf("%s: host network %q is given twice", field, a.Alias)
			}
			seen[a.Alias] = true
			if _, err := netip.ParseAddr(a.Address); err != nil {
				return BadRequestf("%s: address: %v", field, err)
			}
			if err := ValidatePortSpec(a.ReservedPorts); err != nil {
				return BadRequestf("%s: reserved ports: %v", field, err)
			}
		}
	}
	return nil
}
