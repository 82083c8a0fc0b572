package apiconv

import (
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad/structs"
)

// AuthMethodConfigFromAPI converts an auth method's configuration as
// submitted (PUT /v1/acl/auth-method): the same fields under the same
// names.
func AuthMethodConfigFromAPI(c *api.ACLAuthMethodConfig) *structs.ACLAuthMethodConfig {
	return convertInto[structs.ACLAuthMethodConfig](c)
}

// AuthMethodConfigToAPI converts a stored auth method's configuration.
func AuthMethodConfigToAPI(c *structs.ACLAuthMethodConfig) *api.ACLAuthMethodConfig {
	return convertInto[api.ACLAuthMethodConfig](c)
}
