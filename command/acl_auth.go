package command

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// aclAuthCommands are the `acl auth-method` and `acl binding-rule`
// subtrees.
func aclAuthCommands() []*command {
	return []*command{
		{name: "auth-method", synopsis: "Interact with ACL auth methods", subs: []*command{
			{name: "create", synopsis: "Create a new ACL auth method", run: aclAuthMethodCreate},
			{name: "delete", synopsis: "Delete an existing ACL auth method", run: aclAuthMethodDelete},
			{name: "info", synopsis: "Fetch information on an existing ACL auth method", run: aclAuthMethodInfo},
			{name: "list", synopsis: "List ACL auth methods", run: aclAuthMethodList},
			{name: "update", synopsis: "Update an existing ACL auth method", run: aclAuthMethodUpdate},
		}},
		{name: "binding-rule", synopsis: "Interact with ACL binding rules", subs: []*command{
			{name: "create", synopsis: "Create a new ACL binding rule", run: aclBindingRuleCreate},
			{name: "delete", synopsis: "Delete an existing ACL binding rule", run: aclBindingRuleDelete},
			{name: "info", synopsis: "Fetch information on an existing ACL binding rule", run: aclBindingRuleInfo},
			{name: "list", synopsis: "List ACL binding rules", run: aclBindingRuleList},
			{name: "update", synopsis: "Update an existing ACL binding rule", run: aclBindingRuleUpdate},
		}},
	}
}

const aclAuthMethodFlagsHelp = `
  -name
    The name of the auth method (letters, digits and dashes, up to 128).

  -type
    The type of the auth method: OIDC or JWT.

  -max-token-ttl
    The longest life of a token the auth method creates, e.g. "1h".

  -token-locality
    The kind of token the auth method creates: local or global.

  -token-name-format
    The name format of created tokens; default
    '${auth_method_type}-${auth_method_name}'.

  -default
    Make this the default auth method of its type.

  -config
    The auth method configuration as JSON; "-" reads it from stdin, and
    "@<path>" from a file.

  -json
    Output the auth method in its JSON format.

  Drover stores and validates auth methods; it does not perform OIDC or
  JWT logins.`

// authMethodFlags binds the create/update flags.
type authMethodFlags struct {
	name, typ, locality, nameFormat, config string
	ttl                                     time.Duration
	def, jsonOut                            bool
}

func (f *authMethodFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.name, "name", "", "")
	fs.StringVar(&f.typ, "type", "", "")
	fs.StringVar(&f.locality, "token-locality", "", "")
	fs.StringVar(&f.nameFormat, "token-name-format", "", "")
	fs.StringVar(&f.config, "config", "", "")
	fs.DurationVar(&f.ttl, "max-token-ttl", 0, "")
	fs.BoolVar(&f.def, "default", false, "")
	fs.BoolVar(&f.jsonOut, "json", false, "")
}

// apply sets on m the fields whose flags were given.
func (f *authMethodFlags) apply(m *Meta, fs *flag.FlagSet, am *api.ACLAuthMethod) error {
	var err error
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "name":
			am.Name = f.name
		case "type":
			am.Type = strings.ToUpper(f.typ)
		case "token-locality":
			am.TokenLocality = f.locality
		case "token-name-format":
			am.TokenNameFormat = f.nameFormat
		case "max-token-ttl":
			am.MaxTokenTTL = f.ttl
		case "default":
			am.Default = f.def
		case "config":
			raw := f.config
			switch {
			case raw == "-":
				raw, err = m.readPathOrStdin("-")
			case strings.HasPrefix(raw, "@"):
				var b []byte
				b, err = os.ReadFile(raw[1:])
				raw = string(b)
			}
			if err == nil {
				cfg := &api.ACLAuthMethodConfig{}
				if jerr := json.Unmarshal([]byte(raw), cfg); jerr != nil {
					err = fmt.Errorf("failed to parse -config: %w", jerr)
				}
				am.Config = cfg
			}
		}
	})
	return err
}

// aclAuthMethodCreate implements `drover acl auth-method create`.
func aclAuthMethodCreate(m *Meta, args []string) int {
	help := "Usage: drover acl auth-method create [options]\n\n  Create a new ACL auth method.\n\nOptions:\n" + aclAuthMethodFlagsHelp
	fs := m.FlagSet("acl auth-method create")
	var f authMethodFlags
	f.bind(fs)
	if code, ok := m.parse(fs, args, help); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return m.usageError("This command takes no arguments", help)
	}
	am := &api.ACLAuthMethod{}
	if err := f.apply(m, fs, am); err != nil {
		m.errorf("Error: %s", err)
		return 1
	}
	if am.Name == "" {
		return m.usageError("ACL auth method name must be specified using the -name flag", help)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	out, _, err := c.ACLAuthMethods().Create(am, nil)
	if err != nil {
		m.errorf("Error creating ACL auth method: %s", err)
		return 1
	}
	return m.printAuthMethod(out, f.jsonOut)
}

// aclAuthMethodUpdate implements `drover acl auth-method update`: the
// given flags change the stored method, the rest stays.
func aclAuthMethodUpdate(m *Meta, args []string) int {
	help := "Usage: drover acl auth-method update [options] <name>\n\n  Update an existing ACL auth method.\n\nOptions:\n" + aclAuthMethodFlagsHelp
	fs := m.FlagSet("acl auth-method update")
	var f authMethodFlags
	f.bind(fs)
	c, arg, code, ok := m.oneArg(fs, args, help, "<name>")
	if !ok {
		return code
	}
	am, _, err := c.ACLAuthMethods().Get(arg, nil)
	if err != nil {
		m.errorf("Error fetching ACL auth method: %s", err)
		return 1
	}
	if err := f.apply(m, fs, am); err != nil {
		m.errorf("Error: %s", err)
		return 1
	}
	if am.Name != arg {
		m.errorf("Error: an ACL auth method cannot be renamed")
		return 1
	}
	out, _, err := c.ACLAuthMethods().Update(am, nil)
	if err != nil {
		m.errorf("Error updating ACL auth method: %s", err)
		return 1
	}
	return m.printAuthMethod(out, f.jsonOut)
}

// aclAuthMethodDelete implements `drover acl auth-method delete`.
func aclAuthMethodDelete(m *Meta, args []string) int {
	const help = "Usage: drover acl auth-method delete <name>\n\n  Delete an ACL auth method and its binding rules."
	fs := m.FlagSet("acl auth-method delete")
	c, arg, code, ok := m.oneArg(fs, args, help, "<name>")
	if !ok {
		return code
	}
	if _, err := c.ACLAuthMethods().Delete(arg, nil); err != nil {
		m.errorf("Error deleting ACL auth method: %s", err)
		return 1
	}
	m.outf("ACL auth method %s successfully deleted", arg)
	return 0
}

// aclAuthMethodInfo implements `drover acl auth-method info`.
func aclAuthMethodInfo(m *Meta, args []string) int {
	const help = "Usage: drover acl auth-method info [-json] <name>\n\n  Show an ACL auth method."
	fs := m.FlagSet("acl auth-method info")
	var jsonOut bool
	fs.BoolVar(&jsonOut, "json", false, "")
	c, arg, code, ok := m.oneArg(fs, args, help, "<name>")
	if !ok {
		return code
	}
	am, _, err := c.ACLAuthMethods().Get(arg, nil)
	if err != nil {
		m.errorf("Error fetching ACL auth method: %s", err)
		return 1
	}
	return m.printAuthMethod(am, jsonOut)
}

// aclAuthMethodList implements `drover acl auth-method list`.
func aclAuthMethodList(m *Meta, args []string) int {
	const help = "Usage: drover acl auth-method list [-json]\n\n  List the ACL auth methods."
	fs := m.FlagSet("acl auth-method list")
	var jsonOut bool
	fs.BoolVar(&jsonOut, "json", false, "")
	c, code, ok := m.noArg(fs, args, help)
	if !ok {
		return code
	}
	ams, _, err := c.ACLAuthMethods().List(nil)
	if err != nil {
		m.errorf("Error listing ACL auth methods: %s", err)
		return 1
	}
	if jsonOut {
		return m.printJSON(ams)
	}
	if len(ams) == 0 {
		m.outf("No ACL auth methods found")
		return 0
	}
	rows := []string{"Name|Type|Default"}
	for _, a := range ams {
		rows = append(rows, fmt.Sprintf("%s|%s|%t", a.Name, a.Type, a.Default))
	}
	m.outf("%s", formatList(rows))
	return 0
}

// printAuthMethod prints an auth method as Nomad's CLI lays it out.
func (m *Meta) printAuthMethod(am *api.ACLAuthMethod, jsonOut bool) int {
	if jsonOut {
		return m.printJSON(am)
	}
	rows := []string{"Name|" + am.Name, "Type|" + am.Type, "Locality|" + am.TokenLocality,
		"Max Token TTL|" + am.MaxTokenTTL.String(), "Token Name Format|" + am.TokenNameFormat,
		fmt.Sprintf("Default|%t", am.Default),
		fmt.Sprintf("Create Index|%d", am.CreateIndex), fmt.Sprintf("Modify Index|%d", am.ModifyIndex)}
	out := formatKV(rows)
	if c := am.Config; c != nil {
		cfg := []string{"JWKS URL|" + orNone(c.JWKSURL), "OIDC Discovery URL|" + orNone(c.OIDCDiscoveryURL),
			"OIDC Client ID|" + orNone(c.OIDCClientID), "Bound audiences|" + orNone(strings.Join(c.BoundAudiences, ",")),
			"Bound issuer|" + orNone(strings.Join(c.BoundIssuer, ",")),
			"Allowed redirects URIs|" + orNone(strings.Join(c.AllowedRedirectURIs, ",")),
			"Signing algorithms|" + orNone(strings.Join(c.SigningAlgs, ",")),
			"Claim mappings|" + orNone(formatMappings(c.ClaimMappings)),
			"List claim mappings|" + orNone(formatMappings(c.ListClaimMappings))}
		out += "\n\nAuth Method Config\n" + formatKV(cfg)
	}
	m.outf("%s", out)
	return 0
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// formatMappings renders claim mappings as Nomad's CLI does.
func formatMappings(mm map[string]string) string {
	keys := make([]string, 0, len(mm))
	for k := range mm {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("{%s: %s}", k, mm[k]))
	}
	return strings.Join(parts, "; ")
}
