package command

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/wire"
)

// gatesSection returns the "Gates" section of `deployment status`: one row
// per group with a metric or webhook gate record, or "" when there is
// none (or the server does not answer the extension route: a Nomad
// server).
func (mon *monitor) gatesSection(d *api.Deployment) string {
	var out wire.DeploymentGates
	if _, err := mon.client.Raw().Query(wire.RouteDeploymentGates+d.ID, &out, &api.QueryOptions{Namespace: d.Namespace}); err != nil {
		return ""
	}
	return formatGates(&out)
}

// formatGates renders the gate records: the checkpoint waited for, the
// last answer, the failed metric evaluations, the waves passed.
func formatGates(g *wire.DeploymentGates) string {
	if len(g.Gates) == 0 {
		return ""
	}
	names := make([]string, 0, len(g.Gates))
	for name := range g.Gates {
		names = append(names, name)
	}
	sort.Strings(names)
	rows := []string{"Task Group|Waiting For|Gate|Result|Failures|Passed|Paused By|Reason|Updated"}
	for _, name := range names {
		r := g.Gates[name]
		wait := r.Checkpoint
		if wait == "" {
			wait = "-"
		}
		updated := "-"
		if r.UpdatedAt > 0 {
			updated = time.Unix(0, r.UpdatedAt).UTC().Format(time.RFC3339)
		}
		rows = append(rows, strings.Join([]string{
			name, wait, dash(r.Gate), dash(r.Result), fmt.Sprintf("%d/%d", r.Failures, r.Evaluations),
			fmt.Sprint(r.Passed), dash(r.PausedBy), dash(strings.ReplaceAll(r.Reason, "|", "/")), updated,
		}, "|"))
	}
	return "\n\nGates\n" + formatList(rows)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
