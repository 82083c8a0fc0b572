package sockaddrtmpl

import (
	"fmt"
	"slices"
	"strings"

	sockaddr "github.com/hashicorp/go-sockaddr"
	"github.com/hashicorp/go-sockaddr/template"
)

// IsTemplate reports whether s is a go-sockaddr template (holds "{{").
func IsTemplate(s string) bool { return strings.Contains(s, "{{") }

// HostAddrs lists the host's interface addresses, the "." of a template.
func HostAddrs() (sockaddr.IfAddrs, error) { return sockaddr.GetAllInterfaces() }

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
