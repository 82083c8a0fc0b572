package command

import (
	"github.com/hashicorp/nomad/api"
)

const nodeIntroCreateHelp = `Usage: drover node intro create [options]

  Generate a client introduction token: a signed JWT a new client node
  presents (client.intro_token, NOMAD_CLIENT_INTRO_TOKEN or
  -client-intro-token) when it first registers. Servers with
  client_introduction { enforcement = "strict" } refuse nodes without one.
  Scope the token to a node name when you can.

  If ACLs are enabled, this command requires a token with the node:write
  capability.

Node Intro Create Options:

  -node-name
    The name of the node the token is scoped to. Default: none (any node
    of the pool).

  -node-pool
    The node pool the token is scoped to. Default: "default".

  -ttl
    The lifetime of the token. Default: the server's
    client_introduction default_identity_ttl (5m).

  -json
    Output the response object in JSON format.`

// nodeIntroCreate implements `drover node intro create`.
func nodeIntroCreate(m *Meta, args []string) int {
	var req api.ACLIdentityClientIntroductionTokenRequest
	var jsonOut bool
	fs := m.FlagSet("node intro create")
	fs.StringVar(&req.NodeName, "node-name", "", "")
	fs.StringVar(&req.NodePool, "node-pool", "", "")
	fs.DurationVar(&req.TTL, "ttl", 0, "")
	fs.BoolVar(&jsonOut, "json", false, "")
	c, code, ok := m.noArg(fs, args, nodeIntroCreateHelp)
	if !ok {
		return code
	}
	if fs.NArg() != 0 {
		return m.usageError("This command takes no arguments", nodeIntroCreateHelp)
	}
	resp, _, err := c.ACLIdentity().CreateClientIntroductionToken(&req, nil)
	if err != nil {
		m.errorf("Error generating client introduction token: %s", err)
		return 1
	}
	if jsonOut {
		return m.printJSON(resp)
	}
	m.outf("Successfully generated client introduction token:\n\n%s", resp.JWT)
	return 0
}
