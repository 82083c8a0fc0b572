package fingerprint

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sort"

	sockaddr "github.com/hashicorp/go-sockaddr"

	"github.com/drover-project/drover/helper/sockaddrtmpl"
	"github.com/drover-project/drover/nomad/structs"
)

// Interface is one network interface of the host and its addresses, in
// the order the kernel lists them.
type Interface struct {
	Name  string
	Addrs []netip.Addr
}

// Interfaces lists the host's interfaces with their addresses.
func Interfaces() ([]Interface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	out := make([]Interface, 0, len(ifs))
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		it := Interface{Name: ifc.Name}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(ipn.IP); ok {
					it.Addrs = append(it.Addrs, ip.Unmap())
				}
			}
		}
		out = append(out, it)
	}
	return out, nil
}

// HostNetworks resolves each configured host network to one address of
// ifaces: the first address inside its CIDR (among those of its Interface
// when it names one), else, with no CIDR, its Interface's first address.
// The result has one NodeNetworkResource per interface used, in interface
// order, each address carrying its network's name as Alias and its
// reserved ports. unresolved names, for each network that found no
// address, why (the node does not offer it).
func HostNetworks(cfg map[string]*structs.ClientHostNetworkConfig, ifaces []Interface) (nets []*structs.NodeNetworkResource, unresolved map[string]string) {
	names := make([]string, 0, len(cfg))
	for n := range cfg {
		names = append(names, n)
	}
	sort.Strings(names)
	byIface := map[string]*structs.NodeNetworkResource{}
	for _, name := range names {
		hn := cfg[name]
		ifName, addr, why := resolveHostNetwork(hn, ifaces)
		if why != "" {
			if unresolved == nil {
				unresolved = map[string]string{}
			}
			unresolved[name] = why
			continue
		}
		nw := byIface[ifName]
		if nw == nil {
			nw = &structs.NodeNetworkResource{Mode: "host", Device: ifName}
			byIface[ifName] = nw
		}
		family := "ipv4"
		if addr.Is6() {
			family = "ipv6"
		}
		nw.Addresses = append(nw.Addresses, structs.NodeNetworkAddress{
			Family: family, Alias: name, Address: addr.String(), ReservedPorts: hn.ReservedPorts,
		})
	}
	for _, it := range ifaces {
		if nw := byIface[it.Name]; nw != nil {
			nets = append(nets, nw)
		}
	}
	return nets, unresolved
}

func resolveHostNetwork(hn *structs.ClientHostNetworkConfig, ifaces []Interface) (iface string, addr netip.Addr, why string) {
	var prefix netip.Prefix
	if hn.CIDR != "" {
		p, err := netip.ParsePrefix(hn.CIDR)
		if err != nil {
			return "", netip.Addr{}, fmt.Sprintf("cidr %q: %v", hn.CIDR, err)
		}
		prefix = p.Masked()
	}
	found := false
	for _, it := range ifaces {
		if hn.Interface != "" && it.Name != hn.Interface {
			continue
		}
		found = true
		for _, a := range it.Addrs {
			if !prefix.IsValid() || prefix.Contains(a) {
				return it.Name, a, ""
			}
		}
	}
	switch {
	case hn.Interface != "" && !found:
		return "", netip.Addr{}, fmt.Sprintf("no interface %q", hn.Interface)
	case hn.Interface != "" && prefix.IsValid():
		return "", netip.Addr{}, fmt.Sprintf("interface %q has no address in %s", hn.Interface, hn.CIDR)
	case hn.Interface != "":
		return "", netip.Addr{}, fmt.Sprintf("interface %q has no address", hn.Interface)
	default:
		return "", netip.Addr{}, fmt.Sprintf("no interface has an address in %s", hn.CIDR)
	}
}

// ResolveInterfaceTemplates returns cfg with each Interface that is a
// go-sockaddr template replaced by the one interface name it resolves to
// against addrs (sockaddrtmpl.Interface); cfg itself is left alone. A
// template that does not parse, or resolves to no interface or to more
// than one, is an error naming the field (client.host_network "x".interface).
func ResolveInterfaceTemplates(cfg map[string]*structs.ClientHostNetworkConfig, addrs sockaddr.IfAddrs) (map[string]*structs.ClientHostNetworkConfig, error) {
	out := make(map[string]*structs.ClientHostNetworkConfig, len(cfg))
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(cfg)) {
		hn := *cfg[name]
		ifName, err := sockaddrtmpl.Interface(hn.Interface, addrs)
		if err != nil {
			errs = append(errs, fmt.Errorf("client.host_network %q.interface: %w", name, err))
			continue
		}
		hn.Interface = ifName
		out[name] = &hn
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// HasInterfaceTemplate reports whether any host network's interface is a
// go-sockaddr template.
func HasInterfaceTemplate(cfg map[string]*structs.ClientHostNetworkConfig) bool {
	for _, hn := range cfg {
		if sockaddrtmpl.IsTemplate(hn.Interface) {
			return true
		}
	}
	return false
}
