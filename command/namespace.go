package command

import (
	"fmt"

	"github.com/hashicorp/nomad/api"
)

// namespaceCommands is the `namespace` subtree.
func namespaceCommands() *command {
	return &command{name: "namespace", synopsis: "Interact with namespaces", subs: []*command{
		{name: "apply", synopsis: "Create or update a namespace", run: namespaceApply},
		{name: "delete", synopsis: "Delete a namespace", run: namespaceDelete},
		{name: "list", synopsis: "List namespaces", run: namespaceList},
		{name: "status", synopsis: "Display a namespace's status", run: namespaceStatus},
	}}
}

func namespaceApply(m *Meta, args []string) int {
	const help = "Usage: drover namespace apply [-description <text>] <name>\n\n  Create or update a namespace."
	fs := m.FlagSet("namespace apply")
	var desc string
	fs.StringVar(&desc, "description", "", "")
	c, arg, code, ok := m.oneArg(fs, args, help, "<name>")
	if !ok {
		return code
	}
	name := arg
	ns, _, err := c.Namespaces().Info(name, nil)
	if err != nil || ns == nil {
		ns = &api.Namespace{Name: name}
	}
	if desc != "" {
		ns.Description = desc
	}
	if _, err := c.Namespaces().Register(ns, nil); err != nil {
		m.errorf("Error applying namespace: %s", err)
		return 1
	}
	m.outf("Successfully applied namespace %q!", name)
	return 0
}

func namespaceDelete(m *Meta, args []string) int {
	const help = "Usage: drover namespace delete <name>\n\n  Delete a namespace (never \"default\", never one with non-terminal jobs)."
	fs := m.FlagSet("namespace delete")
	c, arg, code, ok := m.oneArg(fs, args, help, "<name>")
	if !ok {
		return code
	}
	if _, err := c.Namespaces().Delete(arg, nil); err != nil {
		m.errorf("Error deleting namespace: %s", err)
		return 1
	}
	m.outf("Successfully deleted namespace %q!", arg)
	return 0
}

func namespaceList(m *Meta, args []string) int {
	const help = "Usage: drover namespace list [-json]\n\n  List the namespaces the token may see."
	fs := m.FlagSet("namespace list")
	var jsonOut bool
	fs.BoolVar(&jsonOut, "json", false, "")
	c, code, ok := m.noArg(fs, args, help)
	if !ok {
		return code
	}
	nss, _, err := c.Namespaces().List(nil)
	if err != nil {
		m.errorf("Error retrieving namespaces: %s", err)
		return 1
	}
	if jsonOut {
		return m.printJSON(nss)
	}
	rows := []string{"Name|Description"}
	for _, ns := range nss {
		rows = append(rows, ns.Name+"|"+ns.Description)
	}
	m.outf("%s", formatList(rows))
	return 0
}

func namespaceStatus(m *Meta, args []string) int {
	const help = "Usage: drover namespace status [-json] <name>\n\n  Show a namespace."
	fs := m.FlagSet("namespace status")
	var jsonOut bool
	fs.BoolVar(&jsonOut, "json", false, "")
	c, arg, code, ok := m.oneArg(fs, args, help, "<name>")
	if !ok {
		return code
	}
	ns, _, err := c.Namespaces().Info(arg, nil)
	if err != nil {
		m.errorf("Error looking up namespace: %s", err)
		return 1
	}
	if jsonOut {
		return m.printJSON(ns)
	}
	quota := ns.Quota
	m.outf("%s", formatKV([]string{"Name|" + ns.Name, "Description|" + ns.Description, "Quota|" + quota,
		fmt.Sprintf("Create Index|%d", ns.CreateIndex), fmt.Sprintf("Modify Index|%d", ns.ModifyIndex)}))
	return 0
}
