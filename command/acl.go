package command

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// aclCommands is the `acl` subtree.
func aclCommands() *command {
	return &command{name: "acl", synopsis: "Interact with ACL policies, tokens and roles", subs: append([]*command{
		{name: "bootstrap", synopsis: "Bootstrap the ACL system for initial token", run: aclBootstrap},
		{name: "policy", synopsis: "Interact with ACL policies", subs: []*command{
			{name: "apply", synopsis: "Create or update an ACL policy", run: aclPolicyApply},
			{name: "delete", synopsis: "Delete an ACL policy", run: aclPolicyDelete},
			{name: "info", synopsis: "Fetch info on an ACL policy", run: aclPolicyInfo},
			{name: "list", synopsis: "List ACL policies", run: aclPolicyList},
		}},
		{name: "role", synopsis: "Interact with ACL roles", subs: []*command{
			{name: "create", synopsis: "Create a new ACL role", run: aclRoleCreate},
			{name: "delete", synopsis: "Delete an existing ACL role", run: aclRoleDelete},
			{name: "info", synopsis: "Fetch information on an existing ACL role", run: aclRoleInfo},
			{name: "list", synopsis: "List ACL roles", run: aclRoleList},
			{name: "update", synopsis: "Update an existing ACL role", run: aclRoleUpdate},
		}},
		{name: "token", synopsis: "Interact with ACL tokens", subs: []*command{
			{name: "create", synopsis: "Create a new ACL token", run: aclTokenCreate},
			{name: "delete", synopsis: "Delete an existing ACL token", run: aclTokenDelete},
			{name: "info", synopsis: "Fetch information on an existing ACL token", run: aclTokenInfo},
			{name: "list", synopsis: "List ACL tokens", run: aclTokenList},
			{name: "self", synopsis: "Lookup self ACL token", run: aclTokenSelf},
			{name: "update", synopsis: "Update an existing ACL token", run: aclTokenUpdate},
		}},
	}, aclAuthCommands()...)}
}

const aclBootstrapHelp = `Usage: drover acl bootstrap [options] [<path>]

  Bootstrap creates the initial management token. It succeeds once; after
  that it fails naming the reset index to write into the
  acl-bootstrap-reset file of the leader's server data directory. With
  <path> (or "-" for stdin) the file's content is the token's secret ID.

ACL Bootstrap Options:

  -json
    Output the token in its JSON format.`

// aclBootstrap implements `drover acl bootstrap`.
func aclBootstrap(m *Meta, args []string) int {
	fs := m.FlagSet("acl bootstrap")
	var jsonOut bool
	fs.BoolVar(&jsonOut, "json", false, "")
	if code, ok := m.parse(fs, args, aclBootstrapHelp); !ok {
		return code
	}
	if fs.NArg() > 1 {
		return m.usageError("This command takes up to one argument: <path>", aclBootstrapHelp)
	}
	secret := ""
	if fs.NArg() == 1 {
		raw, err := m.readPathOrStdin(fs.Arg(0))
		if err != nil {
			m.errorf("Error reading %s: %s", fs.Arg(0), err)
			return 1
		}
		secret = strings.TrimSpace(raw)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	tok, _, err := c.ACLTokens().BootstrapOpts(secret, nil)
	if err != nil {
		m.errorf("Error bootstrapping: %s", err)
		return 1
	}
	return m.printToken(tok, jsonOut)
}

// readPathOrStdin reads a file, or stdin for "-".
func (m *Meta) readPathOrStdin(path string) (string, error) {
	if path == "-" {
		raw, err := io.ReadAll(m.Stdin)
		return string(raw), err
	}
	raw, err := os.ReadFile(path)
	return string(raw), err
}

// printToken prints a token as Nomad's CLI lays it out.
func (m *Meta) printToken(t *api.ACLToken, jsonOut bool) int {
	if jsonOut {
		return m.printJSON(t)
	}
	expiry := "<none>"
	if t.ExpirationTime != nil {
		expiry = t.ExpirationTime.Format(time.RFC3339)
	}
	policies, roles := "n/a", "n/a"
	if t.Type != "management" {
		policies = fmt.Sprint(t.Policies)
		var names []string
		for _, r := range t.Roles {
			names = append(names, r.Name)
		}
		roles = fmt.Sprint(names)
	}
	m.outf("%s", formatKV([]string{
		"Accessor ID|" + t.AccessorID,
		"Secret ID|" + t.SecretID,
		"Name|" + t.Name,
		"Type|" + t.Type,
		fmt.Sprintf("Global|%v", t.Global),
		"Create Time|" + t.CreateTime.String(),
		"Expiry Time|" + expiry,
		fmt.Sprintf("Create Index|%d", t.CreateIndex),
		fmt.Sprintf("Modify Index|%d", t.ModifyIndex),
		"Policies|" + policies,
		"Roles|" + roles,
	}))
	return 0
}

const aclPolicyApplyHelp = `Usage: drover acl policy apply [options] <name> <path>

  Create or update the ACL policy <name> from the rules in <path> ("-" for
  stdin), in Nomad's policy language (HCL or JSON).

ACL Policy Apply Options:

  -description
    A description of the policy.

  -job, -group, -task
    Attach the policy to the workload identities of a job (and optionally
    one of its groups, and one task of that group) in -namespace.`

// aclPolicyApply implements `drover acl policy apply`.
func aclPolicyApply(m *Meta, args []string) int {
	fs := m.FlagSet("acl policy apply")
	var desc, job, group, task string
	fs.StringVar(&desc, "description", "", "")
	fs.StringVar(&job, "job", "", "")
	fs.StringVar(&group, "group", "", "")
	fs.StringVar(&task, "task", "", "")
	if code, ok := m.parse(fs, args, aclPolicyApplyHelp); !ok {
		return code
	}
	if fs.NArg() != 2 {
		return m.usageError("This command takes two arguments: <name> and <path>", aclPolicyApplyHelp)
	}
	rules, err := m.readPathOrStdin(fs.Arg(1))
	if err != nil {
		m.errorf("Error reading policy file: %s", err)
		return 1
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	p := &api.ACLPolicy{Name: fs.Arg(0), Description: desc, Rules: rules}
	if job != "" {
		ns := m.namespace
		if ns == "" {
			ns = os.Getenv("NOMAD_NAMESPACE")
		}
		if ns == "" {
			ns = "default"
		}
		p.JobACL = &api.JobACL{Namespace: ns, JobID: job, Group: group, Task: task}
	}
	if _, err := c.ACLPolicies().Upsert(p, nil); err != nil {
		m.errorf("Error writing ACL policy: %s", err)
		return 1
	}
	m.outf("Successfully wrote %q ACL policy!", p.Name)
	return 0
}

// aclPolicyDelete implements `drover acl policy delete`.
func aclPolicyDelete(m *Meta, args []string) int {
	const help = "Usage: drover acl policy delete <name>\n\n  Delete an ACL policy."
	fs := m.FlagSet("acl policy delete")
	c, arg, code, ok := m.oneArg(fs, args, help, "<name>")
	if !ok {
		return code
	}
	if _, err := c.ACLPolicies().Delete(arg, nil); err != nil {
		m.errorf("Error deleting ACL policy: %s", err)
		return 1
	}
	m.outf("Successfully deleted %q ACL policy!", arg)
	return 0
}

// aclPolicyInfo implements `drover acl policy info`.
func aclPolicyInfo(m *Meta, args []string) int {
	const help = "Usage: drover acl policy info [-json] <name>\n\n  Show an ACL policy and its rules."
	fs := m.FlagSet("acl policy info")
	var jsonOut bool
	fs.BoolVar(&jsonOut, "json", false, "")
	c, arg, code, ok := m.oneArg(fs, args, help, "<name>")
	if !ok {
		return code
	}
	p, _, err := c.ACLPolicies().Info(arg, nil)
	if err != nil {
		m.errorf("Error fetching ACL policy: %s", err)
		return 1
	}
	if jsonOut {
		return m.printJSON(p)
	}
	rows := []string{"Name|" + p.Name, "Description|" + p.Description}
	if j := p.JobACL; j != nil {
		rows = append(rows, "Namespace|"+j.Namespace, "JobID|"+j.JobID, "Group|"+j.Group, "Task|"+j.Task)
	}
	rows = append(rows, fmt.Sprintf("CreateIndex|%d", p.CreateIndex), fmt.Sprintf("ModifyIndex|%d", p.ModifyIndex))
	m.outf("%s\n\nRules:\n\n%s", formatKV(rows), p.Rules)
	return 0
}

// aclPolicyList implements `drover acl policy list`.
func aclPolicyList(m *Meta, args []string) int {
	const help = "Usage: drover acl policy list [-json]\n\n  List the ACL policies the token may see."
	fs := m.FlagSet("acl policy list")
	var jsonOut bool
	fs.BoolVar(&jsonOut, "json", false, "")
	c, code, ok := m.noArg(fs, args, help)
	if !ok {
		return code
	}
	ps, _, err := c.ACLPolicies().List(nil)
	if err != nil {
		m.errorf("Error fetching ACL policies: %s", err)
		return 1
	}
	if jsonOut {
		return m.printJSON(ps)
	}
	if len(ps) == 0 {
		m.outf("No policies found")
		return 0
	}
	rows := []string{"Name|Description"}
	for _, p := range ps {
		rows = append(rows, p.Name+"|"+p.Description)
	}
	m.outf("%s", formatList(rows))
	return 0
}
