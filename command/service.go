package command

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// serviceCommands is the `service` subtree: the native service catalog, as
// `nomad service` has it.
func serviceCommands() *command {
	return &command{name: "service", synopsis: "Interact with registered services", subs: []*command{
		{name: "delete", synopsis: "Deregister a registered service", run: serviceDelete},
		{name: "info", synopsis: "Display an individual service registration", run: serviceInfo},
		{name: "list", synopsis: "Display all registered services", run: serviceList},
	}}
}

// jsonOrTemplate prints v as -json or -t ask (not both); done is false
// when neither was asked for.
func (m *Meta) jsonOrTemplate(jsonOut bool, tmpl string, v any) (code int, done bool) {
	switch {
	case jsonOut && tmpl != "":
		m.errorf("Both json and template formatting are not allowed")
		return 1, true
	case jsonOut:
		return m.printJSON(v), true
	case tmpl != "":
		return m.renderTemplate(tmpl, v), true
	}
	return 0, false
}

// serviceTags renders tags as the service commands do: [a,b].
func serviceTags(tags []string) string { return "[" + strings.Join(tags, ",") + "]" }

func serviceList(m *Meta, args []string) int {
	const help = `Usage: drover service list [options]

  List the services of the native catalog in the namespace (-namespace=*:
  every namespace the token may read). Needs read-job in the namespace.

List Options:

  -json          Output the services in their JSON format.
  -t <tmpl>      Format and display the services using a Go template.`
	fs := m.FlagSet("service list")
	var jsonOut bool
	var tmpl string
	fs.BoolVar(&jsonOut, "json", false, "")
	fs.StringVar(&tmpl, "t", "", "")
	if code, ok := m.parse(fs, args, help); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return m.usageError("This command takes no arguments", help)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	list, _, err := c.Services().List(nil)
	if err != nil {
		m.errorf("Error listing service registrations: %s", err)
		return 1
	}
	if code, done := m.jsonOrTemplate(jsonOut, tmpl, list); done {
		return code
	}
	if len(list) == 0 {
		m.outf("No service registrations found")
		return 0
	}
	ns := m.namespace
	if ns == "" {
		ns = os.Getenv("NOMAD_NAMESPACE")
	}
	all := ns == "*"
	rows := []string{"Service Name|Tags"}
	if all {
		rows = []string{"Service Name|Namespace|Tags"}
	}
	for _, ns := range list {
		for _, s := range ns.Services {
			if all {
				rows = append(rows, s.ServiceName+"|"+ns.Namespace+"|"+serviceTags(s.Tags))
			} else {
				rows = append(rows, s.ServiceName+"|"+serviceTags(s.Tags))
			}
		}
	}
	m.outf("%s", formatList(rows))
	return 0
}

func serviceInfo(m *Meta, args []string) int {
	const help = `Usage: drover service info [options] <service_name>

  Show the registrations of one service of the native catalog. Needs
  read-job in its namespace.

Info Options:

  -per-page <n>      How many results to show per page.
  -page-token <tok>  Where to start pagination.
  -filter <expr>     Filter expression over the registrations.
  -json              Output the registrations in their JSON format.
  -t <tmpl>          Format and display the registrations using a Go template.
  -verbose           Display full information.`
	fs := m.FlagSet("service info")
	var jsonOut, verbose bool
	var tmpl, token, filter string
	var perPage int
	fs.BoolVar(&jsonOut, "json", false, "")
	fs.StringVar(&tmpl, "t", "", "")
	fs.BoolVar(&verbose, "verbose", false, "")
	fs.IntVar(&perPage, "per-page", 0, "")
	fs.StringVar(&token, "page-token", "", "")
	fs.StringVar(&filter, "filter", "", "")
	c, name, code, ok := m.oneArg(fs, args, help, "<service_name>")
	if !ok {
		return code
	}
	q := &api.QueryOptions{PerPage: int32(perPage), NextToken: token, Filter: filter}
	regs, qm, err := c.Services().Get(name, q)
	if err != nil {
		m.errorf("Error listing service registrations: %s", err)
		return 1
	}
	if code, done := m.jsonOrTemplate(jsonOut, tmpl, regs); done {
		return code
	}
	if len(regs) == 0 {
		m.outf("No service registrations found")
		return 0
	}
	if verbose {
		blocks := make([]string, 0, len(regs))
		for _, r := range regs {
			blocks = append(blocks, formatKV([]string{
				"ID|" + r.ID, "Service Name|" + r.ServiceName, "Namespace|" + r.Namespace,
				"Job ID|" + r.JobID, "Alloc ID|" + r.AllocID, "Node ID|" + r.NodeID,
				"Datacenter|" + r.Datacenter, "Address|" + serviceAddr(r), "Tags|" + serviceTags(r.Tags),
			}))
		}
		m.outf("%s", strings.Join(blocks, "\n\n"))
	} else {
		rows := []string{"Job ID|Address|Tags|Node ID|Alloc ID"}
		for _, r := range regs {
			rows = append(rows, fmt.Sprintf("%s|%s|%s|%s|%s", r.JobID, serviceAddr(r), serviceTags(r.Tags),
				shortID(r.NodeID, false), shortID(r.AllocID, false)))
		}
		m.outf("%s", formatList(rows))
	}
	if qm != nil && qm.NextToken != "" {
		m.outf("\nNext page token: %s", qm.NextToken)
	}
	return 0
}

// serviceAddr is a registration's address:port.
func serviceAddr(r *api.ServiceRegistration) string {
	return net.JoinHostPort(r.Address, strconv.Itoa(r.Port))
}

func serviceDelete(m *Meta, args []string) int {
	const help = `Usage: drover service delete [options] <service_name> <service_id>

  Delete one registration of the native catalog. Needs submit-job in its
  namespace. While the allocation runs, its client writes it again within
  a minute (clients send their registrations every minute).`
	fs := m.FlagSet("service delete")
	if code, ok := m.parse(fs, args, help); !ok {
		return code
	}
	if fs.NArg() != 2 {
		return m.usageError("This command takes two arguments: <service_name> and <service_id>", help)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	if _, err := c.Services().Delete(fs.Arg(0), fs.Arg(1), nil); err != nil {
		m.errorf("Error deleting service registration: %s", err)
		return 1
	}
	m.outf("Successfully deleted service registration")
	return 0
}
