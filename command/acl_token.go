package command

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

const aclTokenCreateHelp = `Usage: drover acl token create [options]

  Create a new ACL token.

ACL Token Create Options:

  -name
    A name for the token.

  -type
    "client" (the default) or "management".

  -policy
    A policy of the token; repeat for several.

  -role-name, -role-id
    A role of the token, by name or ID; repeat for several.

  -global
    Replicate the token to every region.

  -ttl
    Expire the token after this duration (e.g. "8h").

  -json
    Output the token in its JSON format.`

// aclTokenCreate implements `drover acl token create`.
func aclTokenCreate(m *Meta, args []string) int {
	fs := m.FlagSet("acl token create")
	var name, typ string
	var ttl time.Duration
	var policies, roleNames, roleIDs stringSlice
	var global, jsonOut bool
	fs.StringVar(&name, "name", "", "")
	fs.StringVar(&typ, "type", "client", "")
	fs.Var(&policies, "policy", "")
	fs.Var(&roleNames, "role-name", "")
	fs.Var(&roleIDs, "role-id", "")
	fs.BoolVar(&global, "global", false, "")
	fs.DurationVar(&ttl, "ttl", 0, "")
	fs.BoolVar(&jsonOut, "json", false, "")
	if code, ok := m.parse(fs, args, aclTokenCreateHelp); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return m.usageError("This command takes no arguments", aclTokenCreateHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	tok := &api.ACLToken{Name: name, Type: typ, Policies: policies, Global: global, ExpirationTTL: ttl,
		Roles: roleLinks(roleNames, roleIDs)}
	out, _, err := c.ACLTokens().Create(tok, nil)
	if err != nil {
		m.errorf("Error creating token: %s", err)
		return 1
	}
	return m.printToken(out, jsonOut)
}

func roleLinks(names, ids []string) []*api.ACLTokenRoleLink {
	var out []*api.ACLTokenRoleLink
	for _, n := range names {
		out = append(out, &api.ACLTokenRoleLink{Name: n})
	}
	for _, id := range ids {
		out = append(out, &api.ACLTokenRoleLink{ID: id})
	}
	return out
}

// aclTokenUpdate implements `drover acl token update`.
func aclTokenUpdate(m *Meta, args []string) int {
	const help = `Usage: drover acl token update [options] <accessor ID>

  Update an ACL token: -name, -type, -policy, -role-name and -role-id
  replace the token's values when given.`
	fs := m.FlagSet("acl token update")
	var name, typ string
	var policies, roleNames, roleIDs stringSlice
	var jsonOut bool
	fs.StringVar(&name, "name", "", "")
	fs.StringVar(&typ, "type", "", "")
	fs.Var(&policies, "policy", "")
	fs.Var(&roleNames, "role-name", "")
	fs.Var(&roleIDs, "role-id", "")
	fs.BoolVar(&jsonOut, "json", false, "")
	c, arg, code, ok := m.oneArg(fs, args, help, "<accessor ID>")
	if !ok {
		return code
	}
	tok, _, err := c.ACLTokens().Info(arg, nil)
	if err != nil {
		m.errorf("Error fetching token: %s", err)
		return 1
	}
	setIf(&tok.Name, name)
	setIf(&tok.Type, typ)
	if len(policies) > 0 {
		tok.Policies = policies
	}
	if len(roleNames)+len(roleIDs) > 0 {
		tok.Roles = roleLinks(roleNames, roleIDs)
	}
	tok.ExpirationTTL = 0
	out, _, err := c.ACLTokens().Update(tok, nil)
	if err != nil {
		m.errorf("Error updating token: %s", err)
		return 1
	}
	return m.printToken(out, jsonOut)
}

// aclTokenDelete implements `drover acl token delete`.
func aclTokenDelete(m *Meta, args []string) int {
	const help = "Usage: drover acl token delete <accessor ID>\n\n  Delete an ACL token."
	fs := m.FlagSet("acl token delete")
	c, arg, code, ok := m.oneArg(fs, args, help, "<accessor ID>")
	if !ok {
		return code
	}
	if _, err := c.ACLTokens().Delete(arg, nil); err != nil {
		m.errorf("Error deleting token: %s", err)
		return 1
	}
	m.outf("Token %s successfully deleted", arg)
	return 0
}

// aclTokenInfo implements `drover acl token info`.
func aclTokenInfo(m *Meta, args []string) int {
	const help = "Usage: drover acl token info [-json] <accessor ID>\n\n  Show an ACL token."
	fs := m.FlagSet("acl token info")
	var jsonOut bool
	fs.BoolVar(&jsonOut, "json", false, "")
	c, arg, code, ok := m.oneArg(fs, args, help, "<accessor ID>")
	if !ok {
		return code
	}
	tok, _, err := c.ACLTokens().Info(arg, nil)
	if err != nil {
		m.errorf("Error fetching token: %s", err)
		return 1
	}
	return m.printToken(tok, jsonOut)
}

// aclTokenSelf implements `drover acl token self`.
func aclTokenSelf(m *Meta, args []string) int {
	const help = "Usage: drover acl token self [-json]\n\n  Show the token of this request (NOMAD_TOKEN or -token)."
	fs := m.FlagSet("acl token self")
	var jsonOut bool
	fs.BoolVar(&jsonOut, "json", false, "")
	c, code, ok := m.noArg(fs, args, help)
	if !ok {
		return code
	}
	tok, _, err := c.ACLTokens().Self(nil)
	if err != nil {
		m.errorf("Error fetching self token: %s", err)
		return 1
	}
	return m.printToken(tok, jsonOut)
}

// aclTokenList implements `drover acl token list`.
func aclTokenList(m *Meta, args []string) int {
	const help = "Usage: drover acl token list [-json]\n\n  List ACL tokens (management token required)."
	fs := m.FlagSet("acl token list")
	var jsonOut bool
	fs.BoolVar(&jsonOut, "json", false, "")
	c, code, ok := m.noArg(fs, args, help)
	if !ok {
		return code
	}
	toks, _, err := c.ACLTokens().List(nil)
	if err != nil {
		m.errorf("Error fetching tokens: %s", err)
		return 1
	}
	if jsonOut {
		return m.printJSON(toks)
	}
	rows := []string{"Name|Type|Global|Accessor ID|Expired"}
	now := time.Now()
	for _, t := range toks {
		expired := t.ExpirationTime != nil && !now.Before(*t.ExpirationTime)
		rows = append(rows, fmt.Sprintf("%s|%s|%v|%s|%v", t.Name, t.Type, t.Global, t.AccessorID, expired))
	}
	m.outf("%s", formatList(rows))
	return 0
}

const aclRoleHelp = `Usage: drover acl role %s [options]%s

  -name, -description, -policy (repeatable) set the role's fields.`

func roleFlags(m *Meta, name string) (*roleOpts, func(args []string, help string) (int, bool)) {
	o := &roleOpts{}
	fs := m.FlagSet(name)
	fs.StringVar(&o.name, "name", "", "")
	fs.StringVar(&o.desc, "description", "", "")
	fs.Var(&o.policies, "policy", "")
	fs.BoolVar(&o.byName, "by-name", false, "")
	fs.BoolVar(&o.json, "json", false, "")
	return o, func(args []string, help string) (int, bool) {
		code, ok := m.parse(fs, args, help)
		o.args = fs.Args()
		return code, ok
	}
}

type roleOpts struct {
	name, desc   string
	policies     stringSlice
	byName, json bool
	args         []string
}

func (o *roleOpts) links() []*api.ACLRolePolicyLink {
	var out []*api.ACLRolePolicyLink
	for _, p := range o.policies {
		out = append(out, &api.ACLRolePolicyLink{Name: p})
	}
	return out
}

// printRole prints a role as Nomad's CLI lays it out.
func (m *Meta) printRole(r *api.ACLRole, jsonOut bool) int {
	if jsonOut {
		return m.printJSON(r)
	}
	var names []string
	for _, p := range r.Policies {
		names = append(names, p.Name)
	}
	m.outf("%s", formatKV([]string{"ID|" + r.ID, "Name|" + r.Name, "Description|" + r.Description,
		"Policies|" + strings.Join(names, ","), fmt.Sprintf("Create Index|%d", r.CreateIndex),
		fmt.Sprintf("Modify Index|%d", r.ModifyIndex)}))
	return 0
}

func aclRoleCreate(m *Meta, args []string) int {
	help := fmt.Sprintf(aclRoleHelp, "create", "")
	o, parse := roleFlags(m, "acl role create")
	if code, ok := parse(args, help); !ok {
		return code
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	r, _, err := c.ACLRoles().Create(&api.ACLRole{Name: o.name, Description: o.desc, Policies: o.links()}, nil)
	if err != nil {
		m.errorf("Error creating ACL role: %s", err)
		return 1
	}
	return m.printRole(r, o.json)
}

func aclRoleUpdate(m *Meta, args []string) int {
	help := fmt.Sprintf(aclRoleHelp, "update", " <role ID>")
	o, parse := roleFlags(m, "acl role update")
	if code, ok := parse(args, help); !ok {
		return code
	}
	if len(o.args) != 1 {
		return m.usageError("This command takes one argument: <role ID>", help)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	r, _, err := c.ACLRoles().Get(o.args[0], nil)
	if err != nil {
		m.errorf("Error reading ACL role: %s", err)
		return 1
	}
	setIf(&r.Name, o.name)
	setIf(&r.Description, o.desc)
	if len(o.policies) > 0 {
		r.Policies = o.links()
	}
	r, _, err = c.ACLRoles().Update(r, nil)
	if err != nil {
		m.errorf("Error updating ACL role: %s", err)
		return 1
	}
	return m.printRole(r, o.json)
}

func aclRoleInfo(m *Meta, args []string) int {
	help := fmt.Sprintf(aclRoleHelp, "info", " [-by-name] <role ID or name>")
	o, parse := roleFlags(m, "acl role info")
	if code, ok := parse(args, help); !ok {
		return code
	}
	if len(o.args) != 1 {
		return m.usageError("This command takes one argument: <role ID>", help)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	var r *api.ACLRole
	var err error
	if o.byName {
		r, _, err = c.ACLRoles().GetByName(o.args[0], nil)
	} else {
		r, _, err = c.ACLRoles().Get(o.args[0], nil)
	}
	if err != nil {
		m.errorf("Error reading ACL role: %s", err)
		return 1
	}
	return m.printRole(r, o.json)
}

func aclRoleDelete(m *Meta, args []string) int {
	help := fmt.Sprintf(aclRoleHelp, "delete", " <role ID>")
	o, parse := roleFlags(m, "acl role delete")
	if code, ok := parse(args, help); !ok {
		return code
	}
	if len(o.args) != 1 {
		return m.usageError("This command takes one argument: <role ID>", help)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	if _, err := c.ACLRoles().Delete(o.args[0], nil); err != nil {
		m.errorf("Error deleting ACL role: %s", err)
		return 1
	}
	m.outf("ACL role %s successfully deleted", o.args[0])
	return 0
}

func aclRoleList(m *Meta, args []string) int {
	help := fmt.Sprintf(aclRoleHelp, "list", "")
	o, parse := roleFlags(m, "acl role list")
	if code, ok := parse(args, help); !ok {
		return code
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	roles, _, err := c.ACLRoles().List(nil)
	if err != nil {
		m.errorf("Error listing ACL roles: %s", err)
		return 1
	}
	if o.json {
		return m.printJSON(roles)
	}
	if len(roles) == 0 {
		m.outf("No ACL roles found")
		return 0
	}
	rows := []string{"ID|Name|Description|Policies"}
	for _, r := range roles {
		var names []string
		for _, p := range r.Policies {
			names = append(names, p.Name)
		}
		rows = append(rows, fmt.Sprintf("%s|%s|%s|%s", r.ID, r.Name, r.Description, strings.Join(names, ",")))
	}
	m.outf("%s", formatList(rows))
	return 0
}
