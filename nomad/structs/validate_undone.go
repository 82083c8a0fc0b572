package structs

import (
	"fmt"
	"strings"
)

// Settings of Nomad's jobspec that Drover keeps in its job model but does
// not carry out yet. A job asking for one is refused (HTTP 400) naming the
// block and why, never stored and silently not done. Each check is lifted
// when the feature lands; the reason says what to do meanwhile.

// hostNetworkModes are the group network modes Drover runs: tasks share
// the node's network namespace.
var hostNetworkModes = []string{"", "host"}

// undoneGroup adds the refusals of a group's own settings.
func (tg *TaskGroup) undoneGroup(p *problems) {
	for _, n := range tg.Networks {
		undoneNetwork(p, "network: ", n)
	}
}

// undoneTask adds the refusals of a task's settings.
func (t *Task) undoneTask(p *problems) {
	if t.Resources != nil {
		for _, n := range t.Resources.Networks {
			undoneNetwork(p, "resources: network: ", n)
		}
	}
}

// undoneService adds the refusals of a service's settings.
func (s *Service) undoneService(p *problems) {
	if s.AddressMode == ServiceAddressModeDriver {
		p.addf("address_mode \"driver\" is not supported by Drover yet: it advertises host addresses only; use address_mode = \"host\"")
	}
}

// undoneCheck adds the refusals of a service check's settings.
func (c *ServiceCheck) undoneCheck(p *problems) {
	switch c.Type {
	case "grpc":
		p.addf("type \"grpc\" needs Consul: this cluster has no Consul integration; use an http or tcp check")
	}
}

func undoneNetwork(p *problems, prefix string, n *NetworkResource) {
	if n == nil {
		return
	}
	for _, m := range hostNetworkModes {
		if n.Mode == m {
			return
		}
	}
	why := "tasks would run in the node's network namespace"
	if strings.HasPrefix(n.Mode, "cni/") {
		why = "CNI networks are not set up by Drover yet"
	}
	p.addf("%s%s", prefix, fmt.Sprintf("mode %q is not supported by Drover yet: %s; use mode = \"host\"", n.Mode, why))
}
