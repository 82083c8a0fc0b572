// Package sockaddrtmpl resolves the go-sockaddr templates
// (github.com/hashicorp/go-sockaddr/template) an agent configuration may
// give where Nomad takes them: bind_addr, the advertise addresses, and a
// client host_network's interface. A value without "{{" is not a template
// and is returned as written.
//
// Address and Interface evaluate a template against the interface
// addresses they are given (the template's "." and, through its source
// functions such as GetPrivateInterfaces, the host's own), and insist that
// it yields exactly one word: an address (optionally host:port) or an
// interface name. A template that does not parse or execute, that yields
// nothing, or that yields more than one distinct word is an error saying
// so; the caller prefixes the field it came from.
//
// HostAddrs lists this host's interface addresses for them. Nothing here
// keeps state; a template is resolved each time it is asked.
//
// It imports go-sockaddr and the standard library; anyone may import it.
package sockaddrtmpl
