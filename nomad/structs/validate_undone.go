package structs

import (
	"fmt"
	"strings"
)

// Settings of Nomad's jobspec that Drover keeps in its job model but does
// not carry out yet. A job asking for one is refused (HTTP 400) naming the
// block and why, never stored and silently not done. Each check is lifted
// when the feature lands; the reason says what to do meanwhile.

// groupNetworkModes are the group network modes Drover runs besides
// "cni/<name>": the node's network namespace ("" and "host") and a
// namespace of the allocation's own on the client's bridge ("bridge").
var groupNetworkModes = []string{"", "host", "bridge"}

// undoneGroup adds the refusals of a group's own settings.
func (tg *TaskGroup) undoneGroup(p *problems) {
	for _, n := range tg.Networks {
		if n != nil && strings.HasPrefix(n.Mode, cniModePrefix) {
			if n.Mode == cniModePrefix {
				p.addf("network: mode %q names no network: use mode = \"cni/<name>\" with a network of the client's cni_config_dir", n.Mode)
			}
		} else {
			undoneNetwork(p, "network: ", n, groupNetworkModes)
			if n != nil && n.CNI != nil && len(n.CNI.Args) > 0 {
				p.addf("network: cni: needs mode = \"cni/<name>\": its arguments go to that network's plugins")
			}
		}
		if n != nil {
			undoneBridgeOnly(p, tg, n)
			undoneOwnNetworkMode(p, tg, n)
		}
		undoneHostNetworks(p, "network: ", n)
	}
}

// undoneHostNetworks refuses each port of n whose host_network is
// interpolated ("${meta.x}"): Drover places a port on the host network it
// names as written.
func undoneHostNetworks(p *problems, prefix string, n *NetworkResource) {
	if n == nil {
		return
	}
	for _, ports := range [][]Port{n.ReservedPorts, n.DynamicPorts} {
		for _, port := range ports {
			if strings.Contains(port.HostNetwork, "${") {
				p.addf("%sport %q: host_network = %q: interpolation in host_network is not supported by Drover yet: name the host network", prefix, port.Label, port.HostNetwork)
			}
		}
	}
}

// undoneOwnNetworkMode refuses a Docker task's own network_mode in a
// group with a namespace of its own: the task joins the group's.
func undoneOwnNetworkMode(p *problems, tg *TaskGroup, n *NetworkResource) {
	if n.Mode != "bridge" && !strings.HasPrefix(n.Mode, cniModePrefix) {
		return
	}
	for _, t := range tg.Tasks {
		if t == nil || t.Driver != "docker" {
			continue
		}
		if m, ok := t.Config["network_mode"].(string); ok && m != "" {
			p.addf("task %q: config: network_mode = %q cannot be set in a group with network mode %q: the task joins the group's namespace", t.Name, m, n.Mode)
		}
	}
}

// cniModePrefix starts the group network modes of networks configured in
// the client's cni_config_dir ("cni/<name>").
const cniModePrefix = "cni/"

// undoneBridgeOnly refuses the settings of a group network that only a
// namespace of the allocation's own carries out, and that only tasks with
// their own UTS and mount namespaces see: Docker tasks (from the pause
// container) and exec tasks; raw_exec tasks run on the host's files.
func undoneBridgeOnly(p *problems, tg *TaskGroup, n *NetworkResource) {
	var set []string
	if n.Hostname != "" {
		set = append(set, "hostname")
	}
	if n.DNS != nil && (len(n.DNS.Servers) > 0 || len(n.DNS.Searches) > 0 || len(n.DNS.Options) > 0) {
		set = append(set, "dns")
	}
	for _, what := range set {
		if n.Mode != "bridge" && !strings.HasPrefix(n.Mode, cniModePrefix) {
			p.addf("network: %s: needs mode = \"bridge\" or \"cni/<name>\": Drover sets it on the allocation's own network namespace", what)
			continue
		}
		for _, t := range tg.Tasks {
			if t != nil && t.Driver != "docker" && t.Driver != "exec" {
				p.addf("network: %s: applies to docker and exec tasks only in Drover; task %q (driver %q) would not see it", what, t.Name, t.Driver)
				break
			}
		}
	}
}

// undoneTask adds the refusals of a task's settings.
func (t *Task) undoneTask(p *problems) {
	if t.Resources != nil {
		for _, n := range t.Resources.Networks {
			undoneNetwork(p, "resources: network: ", n, hostNetworkModes)
			undoneHostNetworks(p, "resources: network: ", n)
		}
	}
}

// undoneService adds the refusals of a service's settings.
func (s *Service) undoneService(p *problems) {
	if s.AddressMode == ServiceAddressModeDriver {
		p.addf("address_mode \"driver\" is not supported by Drover yet: it advertises host addresses only; use address_mode = \"host\"")
	}
}

// hostNetworkModes are the task network modes Drover runs (a task-level
// network block cannot ask for a namespace; the group's does).
var hostNetworkModes = []string{"", "host"}

// undoneCheck adds the refusals of a service check's settings.
func (c *ServiceCheck) undoneCheck(p *problems) {
	switch c.Type {
	case "grpc":
		p.addf("type \"grpc\" needs Consul: this cluster has no Consul integration; use an http or tcp check")
	}
}

func undoneNetwork(p *problems, prefix string, n *NetworkResource, modes []string) {
	if n == nil {
		return
	}
	for _, m := range modes {
		if n.Mode == m {
			return
		}
	}
	why, use := "tasks would run in the node's network namespace", `use mode = "host", "bridge" or "cni/<name>"`
	switch {
	case len(modes) == len(hostNetworkModes):
		why, use = "a task-level network block cannot have a namespace of its own", `set the mode on the group's network block`
	}
	p.addf("%s%s", prefix, fmt.Sprintf("mode %q is not supported by Drover yet: %s; %s", n.Mode, why, use))
}
