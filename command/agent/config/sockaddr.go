package config

import (
	"errors"
	"fmt"

	sockaddr "github.com/hashicorp/go-sockaddr"

	"github.com/drover-project/drover/helper/sockaddrtmpl"
)

// addrTemplates are the fields that may be go-sockaddr templates resolving
// to one address, as in Nomad: bind_addr and the advertise addresses.
func (c *Config) addrTemplates() []struct {
	field string
	value *string
} {
	return []struct {
		field string
		value *string
	}{
		{"bind_addr", &c.BindAddr},
		{"advertise.http", &c.Advertise.HTTP},
		{"advertise.rpc", &c.Advertise.RPC},
	}
}

// HasAddrTemplate reports whether bind_addr or an advertise address is a
// go-sockaddr template.
func (c *Config) HasAddrTemplate() bool {
	for _, f := range c.addrTemplates() {
		if sockaddrtmpl.IsTemplate(*f.value) {
			return true
		}
	}
	return false
}

// ResolveAddrTemplates replaces bind_addr and the advertise addresses
// given as go-sockaddr templates by the one address each resolves to
// against addrs (the host's interface addresses). A template that does not
// parse, or resolves to no address or to more than one, is an error naming
// its field; c is then left as it was. Validate checks the results as it
// checks addresses written out.
func (c *Config) ResolveAddrTemplates(addrs sockaddr.IfAddrs) error {
	var errs []error
	resolved := map[*string]string{}
	for _, f := range c.addrTemplates() {
		v, err := sockaddrtmpl.Address(*f.value, addrs)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.field, err))
			continue
		}
		resolved[f.value] = v
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for p, v := range resolved {
		*p = v
	}
	return nil
}
