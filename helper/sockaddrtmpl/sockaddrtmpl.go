package sockaddrtmpl

import (
	"fmt"
	"net"
	"slices"
	"strings"

	sockaddr "github.com/hashicorp/go-sockaddr"
	"github.com/hashicorp/go-sockaddr/template"
)

// IsTemplate reports whether s is a go-sockaddr template (holds "{{").
func IsTemplate(s string) bool { return strings.Contains(s, "{{") }

// HostAddrs lists the host's interface addresses, the "." of a template.
func HostAddrs() (sockaddr.IfAddrs, error) { return sockaddr.GetAllInterfaces() }

// Addrs builds interface addresses from "interface=cidr" pairs, in
// order, each on an interface that is up: a host's addresses as a
// template sees them, for tests and fixtures.
func Addrs(pairs ...string) (sockaddr.IfAddrs, error) {
	out := make(sockaddr.IfAddrs, 0, len(pairs))
	for _, p := range pairs {
		name, cidr, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want interface=cidr", p)
		}
		ip, err := sockaddr.NewIPAddr(cidr)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", p, err)
		}
		out = append(out, sockaddr.IfAddr{SockAddr: ip, Interface: net.Interface{Name: name, Flags: net.FlagUp}})
	}
	return out, nil
}

// Address resolves s to one address (or host:port). s without "{{" is
// returned as written.
func Address(s string, addrs sockaddr.IfAddrs) (string, error) {
	return one(s, addrs, "address", "addresses")
}

// Interface resolves s to one interface name. s without "{{" is returned
// as written.
func Interface(s string, addrs sockaddr.IfAddrs) (string, error) {
	return one(s, addrs, "interface", "interfaces")
}

func one(s string, addrs sockaddr.IfAddrs, what, whats string) (string, error) {
	if !IsTemplate(s) {
		return s, nil
	}
	out, err := template.ParseIfAddrs(s, addrs)
	if err != nil {
		return "", fmt.Errorf("go-sockaddr template: %v", err)
	}
	var words []string
	for _, w := range strings.Fields(out) {
		if !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	switch len(words) {
	case 0:
		return "", fmt.Errorf("go-sockaddr template %q resolves to no %s", s, what)
	case 1:
		return words[0], nil
	default:
		return "", fmt.Errorf("go-sockaddr template %q resolves to %d %s (%s): it must resolve to one", s, len(words), whats, strings.Join(words, ", "))
	}
}
