package config

import (
	"fmt"
	"maps"
	"net/netip"
	"sort"

	"github.com/hashicorp/hcl/v2"

	"github.com/drover-project/drover/nomad/structs"
)

// HostNetwork is one client `host_network "name" { cidr, interface,
// reserved_ports }` block: an address of the node that ports naming the
// network (host_network = "name") are placed and mapped on. The client
// resolves it to an address of an interface: the first one inside CIDR
// (of Interface when set), else Interface's first address. Interface may
// be a go-sockaddr template naming one interface.
type HostNetwork struct {
	CIDR          string
	Interface     string
	ReservedPorts string
}

var hostNetworkSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "cidr"}, {Name: "interface"}, {Name: "reserved_ports"}},
}

// decodeHostNetworks decodes the client's host_network blocks into cl.
func decodeHostNetworks(blocks hcl.Blocks, cl *ClientConfig) hcl.Diagnostics {
	var diags hcl.Diagnostics
	seen := map[string]*hcl.Block{}
	for _, b := range blocks {
		if b.Type != "host_network" {
			continue
		}
		if d := checkDuplicate(seen, b, "host_network "+fmt.Sprintf("%q", b.Labels[0])); d != nil {
			diags = append(diags, d)
			continue
		}
		content, d := b.Body.Content(hostNetworkSchema)
		diags = append(diags, d...)
		var hn HostNetwork
		diags = append(diags, decodeAttrs(content.Attributes, map[string]any{
			"cidr": &hn.CIDR, "interface": &hn.Interface, "reserved_ports": &hn.ReservedPorts,
		})...)
		if cl.HostNetworks == nil {
			cl.HostNetworks = map[string]HostNetwork{}
		}
		cl.HostNetworks[b.Labels[0]] = hn
	}
	return diags
}

// mergeHostNetworks returns base with the networks of over added; a
// network named in both is over's.
func mergeHostNetworks(base, over map[string]HostNetwork) map[string]HostNetwork {
	out := maps.Clone(base)
	if len(over) == 0 {
		return out
	}
	if out == nil {
		out = map[string]HostNetwork{}
	}
	maps.Copy(out, over)
	return out
}

// validateHostNetworks checks each host network: a name other than
// "default" (the node's own address), a cidr or an interface, a cidr that
// parses, and a reserved port list. That an address resolves, and that an
// interface given as a go-sockaddr template resolves to one interface, is
// the client's to find when it starts (client/fingerprint).
func validateHostNetworks(bad func(field, format string, args ...any), nets map[string]HostNetwork) {
	names := make([]string, 0, len(nets))
	for n := range nets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		field := fmt.Sprintf("client.host_network %q", n)
		hn := nets[n]
		switch {
		case n == "":
			bad(field, "the network needs a name")
		case n == structs.HostNetworkDefault:
			bad(field, "%q is the node's own address and cannot be configured", n)
		case hn.CIDR == "" && hn.Interface == "":
			bad(field, "needs a cidr or an interface")
		}
		if hn.CIDR != "" {
			if _, err := netip.ParsePrefix(hn.CIDR); err != nil {
				bad(field+".cidr", "%v", err)
			}
		}
		if err := structs.ValidatePortSpec(hn.ReservedPorts); err != nil {
			bad(field+".reserved_ports", "%v", err)
		}
	}
}
