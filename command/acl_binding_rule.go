package command

import (
	"flag"
	"fmt"

	"github.com/hashicorp/nomad/api"
)

const aclBindingRuleFlagsHelp = `
  -description
    A free form description of the binding rule (up to 256 characters).

  -auth-method
    The name of the auth method the rule applies to.

  -selector
    An expression over the login's claims that must match for the rule to
    apply; empty matches every login.

  -bind-type
    What the rule grants: role, policy or management.

  -bind-name
    The role or policy granted (required unless -bind-type=management).

  -json
    Output the binding rule in its JSON format.`

// bindingRuleFlags binds the create/update flags.
type bindingRuleFlags struct {
	desc, method, selector, bindType, bindName string
	jsonOut                                    bool
}

func (f *bindingRuleFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.desc, "description", "", "")
	fs.StringVar(&f.method, "auth-method", "", "")
	fs.StringVar(&f.selector, "selector", "", "")
	fs.StringVar(&f.bindType, "bind-type", "", "")
	fs.StringVar(&f.bindName, "bind-name", "", "")
	fs.BoolVar(&f.jsonOut, "json", false, "")
}

// apply sets on r the fields whose flags were given.
func (f *bindingRuleFlags) apply(fs *flag.FlagSet, r *api.ACLBindingRule) {
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "description":
			r.Description = f.desc
		case "auth-method":
			r.AuthMethod = f.method
		case "selector":
			r.Selector = f.selector
		case "bind-type":
			r.BindType = f.bindType
		case "bind-name":
			r.BindName = f.bindName
		}
	})
}

// aclBindingRuleCreate implements `drover acl binding-rule create`.
func aclBindingRuleCreate(m *Meta, args []string) int {
	help := "Usage: drover acl binding-rule create [options]\n\n  Create a new ACL binding rule.\n\nOptions:\n" + aclBindingRuleFlagsHelp
	fs := m.FlagSet("acl binding-rule create")
	var f bindingRuleFlags
	f.bind(fs)
	if code, ok := m.parse(fs, args, help); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return m.usageError("This command takes no arguments", help)
	}
	r := &api.ACLBindingRule{}
	f.apply(fs, r)
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	out, _, err := c.ACLBindingRules().Create(r, nil)
	if err != nil {
		m.errorf("Error creating ACL binding rule: %s", err)
		return 1
	}
	return m.printBindingRule(out, f.jsonOut)
}

// aclBindingRuleUpdate implements `drover acl binding-rule update`: the
// given flags change the stored rule, the rest stays.
func aclBindingRuleUpdate(m *Meta, args []string) int {
	help := "Usage: drover acl binding-rule update [options] <id>\n\n  Update an existing ACL binding rule.\n\nOptions:\n" + aclBindingRuleFlagsHelp
	fs := m.FlagSet("acl binding-rule update")
	var f bindingRuleFlags
	f.bind(fs)
	c, arg, code, ok := m.oneArg(fs, args, help, "<id>")
	if !ok {
		return code
	}
	r, _, err := c.ACLBindingRules().Get(arg, nil)
	if err != nil {
		m.errorf("Error fetching ACL binding rule: %s", err)
		return 1
	}
	f.apply(fs, r)
	out, _, err := c.ACLBindingRules().Update(r, nil)
	if err != nil {
		m.errorf("Error updating ACL binding rule: %s", err)
		return 1
	}
	return m.printBindingRule(out, f.jsonOut)
}

// aclBindingRuleDelete implements `drover acl binding-rule delete`.
func aclBindingRuleDelete(m *Meta, args []string) int {
	const help = "Usage: drover acl binding-rule delete <id>\n\n  Delete an ACL binding rule."
	fs := m.FlagSet("acl binding-rule delete")
	c, arg, code, ok := m.oneArg(fs, args, help, "<id>")
	if !ok {
		return code
	}
	if _, err := c.ACLBindingRules().Delete(arg, nil); err != nil {
		m.errorf("Error deleting ACL binding rule: %s", err)
		return 1
	}
	m.outf("ACL binding rule %s successfully deleted", arg)
	return 0
}

// aclBindingRuleInfo implements `drover acl binding-rule info`.
func aclBindingRuleInfo(m *Meta, args []string) int {
	const help = "Usage: drover acl binding-rule info [-json] <id>\n\n  Show an ACL binding rule."
	fs := m.FlagSet("acl binding-rule info")
	var jsonOut bool
	fs.BoolVar(&jsonOut, "json", false, "")
	c, arg, code, ok := m.oneArg(fs, args, help, "<id>")
	if !ok {
		return code
	}
	r, _, err := c.ACLBindingRules().Get(arg, nil)
	if err != nil {
		m.errorf("Error fetching ACL binding rule: %s", err)
		return 1
	}
	return m.printBindingRule(r, jsonOut)
}

// aclBindingRuleList implements `drover acl binding-rule list`.
func aclBindingRuleList(m *Meta, args []string) int {
	const help = "Usage: drover acl binding-rule list [-json]\n\n  List the ACL binding rules."
	fs := m.FlagSet("acl binding-rule list")
	var jsonOut bool
	fs.BoolVar(&jsonOut, "json", false, "")
	c, code, ok := m.noArg(fs, args, help)
	if !ok {
		return code
	}
	rs, _, err := c.ACLBindingRules().List(nil)
	if err != nil {
		m.errorf("Error listing ACL binding rules: %s", err)
		return 1
	}
	if jsonOut {
		return m.printJSON(rs)
	}
	if len(rs) == 0 {
		m.outf("No ACL binding rules found")
		return 0
	}
	rows := []string{"ID|Description|Auth Method"}
	for _, r := range rs {
		rows = append(rows, r.ID+"|"+r.Description+"|"+r.AuthMethod)
	}
	m.outf("%s", formatList(rows))
	return 0
}

// printBindingRule prints a binding rule as Nomad's CLI lays it out.
func (m *Meta) printBindingRule(r *api.ACLBindingRule, jsonOut bool) int {
	if jsonOut {
		return m.printJSON(r)
	}
	m.outf("%s", formatKV([]string{"ID|" + r.ID, "Description|" + r.Description, "Auth Method|" + r.AuthMethod,
		"Selector|" + fmt.Sprintf("%q", r.Selector), "Bind Type|" + r.BindType, "Bind Name|" + r.BindName,
		"Create Time|" + formatTime(r.CreateTime), "Modify Time|" + formatTime(r.ModifyTime),
		fmt.Sprintf("Create Index|%d", r.CreateIndex), fmt.Sprintf("Modify Index|%d", r.ModifyIndex)}))
	return 0
}
