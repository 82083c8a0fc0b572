package command

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

const nodeStatusHelp = `Usage: drover node status [options] <node>

  Display status information about a given node. The list of nodes returned
  includes only nodes which jobs may be scheduled to, and includes status
  and other high-level information. If a node ID is passed, information for
  that specific node will be displayed, including its allocations.

Node Status Options:

  -self
    Query the status of the local node.

  -short
    Display short output. Used only when a single node is being queried,
    and drops verbose output about node allocations.

  -verbose
    Display full information, including node attributes and meta.

  -json
    Output the node in its JSON format.`

// nodeStatusOptions are the parsed flags of `node status`.
type nodeStatusOptions struct {
	verbose, json, short, self bool
}

// nodeStatus implements `drover node status`.
func nodeStatus(m *Meta, args []string) int {
	var o nodeStatusOptions
	fs := m.FlagSet("node status")
	fs.BoolVar(&o.verbose, "verbose", false, "")
	fs.BoolVar(&o.json, "json", false, "")
	fs.BoolVar(&o.short, "short", false, "")
	fs.BoolVar(&o.self, "self", false, "")
	if code, ok := m.parse(fs, args, nodeStatusHelp); !ok {
		return code
	}
	if fs.NArg() > 1 || (o.self && fs.NArg() > 0) {
		return m.usageError("This command takes either no arguments or one: <node>", nodeStatusHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	switch {
	case o.self:
		id, err := localNodeID(c)
		if err != nil {
			m.errorf("Error determining local node ID: %s", err)
			return 1
		}
		return showNode(m, c, id, o)
	case fs.NArg() == 0:
		return listNodes(m, c, o)
	}
	id, code := lookupNode(m, c, fs.Arg(0), o.verbose)
	if id == "" {
		return code
	}
	return showNode(m, c, id, o)
}

func localNodeID(c *api.Client) (string, error) {
	self, err := c.Agent().Self()
	if err != nil {
		return "", err
	}
	id := self.Stats["client"]["node_id"]
	if id == "" {
		return "", fmt.Errorf("the agent is not running a client")
	}
	return id, nil
}

func listNodes(m *Meta, c *api.Client, o nodeStatusOptions) int {
	nodes, _, err := c.Nodes().List(nil)
	if err != nil {
		m.errorf("Error querying node status: %s", err)
		return 1
	}
	if o.json {
		return m.printJSON(nodes)
	}
	if len(nodes) == 0 {
		m.outf("No nodes registered")
		return 0
	}
	m.outf("%s", formatNodeList(nodes, o.verbose))
	return 0
}

// formatNodeList renders the node list table.
func formatNodeList(nodes []*api.NodeListStub, verbose bool) string {
	head := "ID|Node Pool|DC|Name|Class|Drain|Eligibility|Status"
	if verbose {
		head = "ID|Node Pool|DC|Name|Class|Address|Version|Drain|Eligibility|Status"
	}
	rows := []string{head}
	for _, n := range nodes {
		cells := []string{shortID(n.ID, verbose), n.NodePool, n.Datacenter, n.Name, valueOr(n.NodeClass, "<none>")}
		if verbose {
			cells = append(cells, n.Address, n.Version)
		}
		cells = append(cells, fmt.Sprint(n.Drain), n.SchedulingEligibility, n.Status)
		rows = append(rows, strings.Join(cells, "|"))
	}
	return formatList(rows)
}

// lookupNode resolves a node ID or prefix; "" means exit with code.
func lookupNode(m *Meta, c *api.Client, prefix string, verbose bool) (string, int) {
	if len(prefix) < 2 {
		m.errorf("Identifier must contain at least two characters.")
		return "", 1
	}
	nodes, _, err := c.Nodes().PrefixList(sanitizeUUIDPrefix(prefix))
	if err != nil {
		m.errorf("Error querying node info: %s", err)
		return "", 1
	}
	for _, n := range nodes {
		if n.ID == prefix {
			return n.ID, 0
		}
	}
	switch len(nodes) {
	case 0:
		m.errorf("No node(s) with prefix %q found", prefix)
		return "", 1
	case 1:
		return nodes[0].ID, 0
	}
	m.errorf("Prefix matched multiple nodes\n\n%s", formatNodeList(nodes, verbose))
	return "", 1
}

func showNode(m *Meta, c *api.Client, id string, o nodeStatusOptions) int {
	node, _, err := c.Nodes().Info(id, nil)
	if err != nil {
		m.errorf("Error querying node info: %s", err)
		return 1
	}
	if o.json {
		return m.printJSON(node)
	}
	sections := []string{formatNodeHeader(node, o.verbose), "Node Events\n" + formatNodeEvents(node.Events, o.verbose)}
	if !o.short {
		allocs, _, err := c.Nodes().Allocations(id, nil)
		if err != nil {
			m.errorf("Error querying node allocations: %s", err)
			return 1
		}
		stubs := make([]*api.AllocationListStub, len(allocs))
		for i, a := range allocs {
			stubs[i] = allocStub(a)
		}
		sections = append(sections, "Allocations\n"+formatAllocStubs(stubs, o.verbose))
	}
	if o.verbose {
		sections = append(sections, "Host Volumes\n"+formatHostVolumes(node.HostVolumes),
			"Host Networks\n"+formatHostNetworks(node.HostNetworks),
			"Attributes\n"+formatMapKV(node.Attributes), "Meta\n"+formatMapKV(node.Meta))
	}
	m.outf("%s", strings.Join(sections, "\n\n"))
	return 0
}

// formatNodeHeader renders the key/value summary of a node.
func formatNodeHeader(n *api.Node, verbose bool) string {
	return formatKV([]string{
		"ID|" + shortID(n.ID, verbose),
		"Name|" + n.Name,
		"Node Pool|" + n.NodePool,
		"Class|" + valueOr(n.NodeClass, "<none>"),
		"DC|" + n.Datacenter,
		"Drain|" + fmt.Sprint(n.Drain),
		"Eligibility|" + n.SchedulingEligibility,
		"Status|" + n.Status,
		"Address|" + valueOr(n.HTTPAddr, "<none>"),
		"Driver Status|" + valueOr(healthyDrivers(n.Drivers), "<none>"),
	})
}

func healthyDrivers(drivers map[string]*api.DriverInfo) string {
	var names []string
	for _, name := range sortedKeys(drivers) {
		if d := drivers[name]; d != nil && d.Detected && d.Healthy {
			names = append(names, name)
		}
	}
	return strings.Join(names, ",")
}

// formatNodeEvents renders node events, newest first.
func formatNodeEvents(events []*api.NodeEvent, verbose bool) string {
	sorted := append([]*api.NodeEvent(nil), events...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Timestamp.After(sorted[j].Timestamp) })
	if !verbose && len(sorted) > maxRecentEvents {
		sorted = sorted[:maxRecentEvents]
	}
	rows := []string{"Time|Subsystem|Message"}
	for _, e := range sorted {
		rows = append(rows, strings.Join([]string{formatTime(e.Timestamp), e.Subsystem, e.Message}, "|"))
	}
	return formatList(rows)
}

// formatHostVolumes renders the node's host volumes, by name.
func formatHostVolumes(vols map[string]*api.HostVolumeInfo) string {
	if len(vols) == 0 {
		return "<none>"
	}
	rows := []string{"Name|ReadOnly|Source"}
	for _, name := range sortedKeys(vols) {
		if v := vols[name]; v != nil {
			rows = append(rows, fmt.Sprintf("%s|%t|%s", name, v.ReadOnly, v.Path))
		}
	}
	return formatList(rows)
}

// formatHostNetworks renders the node's host networks, by name.
func formatHostNetworks(nets map[string]*api.HostNetworkInfo) string {
	if len(nets) == 0 {
		return "<none>"
	}
	rows := []string{"Name|CIDR|Interface|ReservedPorts"}
	for _, name := range sortedKeys(nets) {
		if n := nets[name]; n != nil {
			rows = append(rows, strings.Join([]string{name, valueOr(n.CIDR, "<none>"), valueOr(n.Interface, "<none>"), valueOr(n.ReservedPorts, "<none>")}, "|"))
		}
	}
	return formatList(rows)
}

// formatMapKV renders a string map as aligned key/value lines.
func formatMapKV(kv map[string]string) string {
	if len(kv) == 0 {
		return "<none>"
	}
	rows := make([]string, 0, len(kv))
	for _, k := range sortedKeys(kv) {
		rows = append(rows, k+"|"+kv[k])
	}
	return formatKV(rows)
}
