package command

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// canariesSection lists the placed canaries of d (`drover deployment
// status`): for each group, the allocation, its node and datacenter, and
// its health. It returns "" when d has no placed canary. A node the token
// may not read shows "-" as its datacenter.
func (mon *monitor) canariesSection(d *api.Deployment) string {
	if !hasPlacedCanaries(d) {
		return ""
	}
	allocs, _, err := mon.client.Deployments().Allocations(d.ID, nil)
	if err != nil {
		return fmt.Sprintf("\n\nError fetching canaries: %s", err)
	}
	dcs := map[string]string{}
	for _, a := range allocs {
		if _, seen := dcs[a.NodeID]; seen || !isPlacedCanary(d, a) {
			continue
		}
		dcs[a.NodeID] = "-"
		if n, _, err := mon.client.Nodes().Info(a.NodeID, nil); err == nil {
			dcs[a.NodeID] = n.Datacenter
		}
	}
	return "\n\nCanaries\n" + formatCanaries(d, allocs, dcs, mon.verbose)
}

func hasPlacedCanaries(d *api.Deployment) bool {
	for _, s := range d.TaskGroups {
		if s != nil && len(s.PlacedCanaries) > 0 {
			return true
		}
	}
	return false
}

func isPlacedCanary(d *api.Deployment, a *api.AllocationListStub) bool {
	s := d.TaskGroups[a.TaskGroup]
	if s == nil {
		return false
	}
	for _, id := range s.PlacedCanaries {
		if id == a.ID {
			return true
		}
	}
	return false
}

// formatCanaries renders the placed canaries among allocs, by group then
// node name; dcs maps node IDs to datacenters.
func formatCanaries(d *api.Deployment, allocs []*api.AllocationListStub, dcs map[string]string, verbose bool) string {
	var canaries []*api.AllocationListStub
	for _, a := range allocs {
		if isPlacedCanary(d, a) {
			canaries = append(canaries, a)
		}
	}
	sort.Slice(canaries, func(i, j int) bool {
		a, b := canaries[i], canaries[j]
		if a.TaskGroup != b.TaskGroup {
			return a.TaskGroup < b.TaskGroup
		}
		return a.NodeName < b.NodeName || (a.NodeName == b.NodeName && a.ID < b.ID)
	})
	rows := []string{"Task Group|Alloc ID|Node ID|Node Name|Datacenter|Status|Healthy"}
	for _, a := range canaries {
		healthy := "-"
		if a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil {
			healthy = fmt.Sprint(*a.DeploymentStatus.Healthy)
		}
		dc := dcs[a.NodeID]
		if dc == "" {
			dc = "-"
		}
		rows = append(rows, strings.Join([]string{a.TaskGroup, shortID(a.ID, verbose), shortID(a.NodeID, verbose),
			a.NodeName, dc, a.ClientStatus, healthy}, "|"))
	}
	return formatList(rows)
}
