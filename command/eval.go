package command

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

const evalStatusHelp = `Usage: drover eval status [options] <evaluation>

  Display information about evaluations. In the case an evaluation could not
  place all the requested allocations, this command can be used to determine
  the failure reasons. The evaluation ID may be given in full or as a prefix.

  With -monitor, the command follows the evaluation (and its deployment)
  until it finishes: exit 0 on success, 2 on placement failures, 1 on other
  errors.

Eval Status Options:

  -monitor
    Monitor an outstanding evaluation.

  -verbose
    Show full information.

  -json
    Output the evaluation in its JSON format.`

// evalStatus implements `drover eval status`.
func evalStatus(m *Meta, args []string) int {
	fs := m.FlagSet("eval status")
	var verbose, jsonOut, monitorMode bool
	fs.BoolVar(&verbose, "verbose", false, "")
	fs.BoolVar(&jsonOut, "json", false, "")
	fs.BoolVar(&monitorMode, "monitor", false, "")
	if code, ok := m.parse(fs, args, evalStatusHelp); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return m.usageError("This command takes one argument: <evaluation>", evalStatusHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	eval, code := lookupEval(m, c, fs.Arg(0), verbose)
	if eval == nil {
		return code
	}
	if monitorMode {
		return newMonitor(m, c, verbose).monitorEval(eval.ID)
	}
	if jsonOut {
		return m.printJSON(eval)
	}
	allocs, _, err := c.Evaluations().Allocations(eval.ID, nil)
	if err != nil {
		m.errorf("Error querying related allocations: %s", err)
		return 1
	}
	m.outf("%s", formatEvalStatus(eval, allocs, verbose))
	return 0
}

// lookupEval resolves an evaluation ID or prefix; nil means exit with code.
func lookupEval(m *Meta, c *api.Client, prefix string, verbose bool) (*api.Evaluation, int) {
	if len(prefix) < 2 {
		m.errorf("Identifier must contain at least two characters.")
		return nil, 1
	}
	evals, _, err := c.Evaluations().PrefixList(sanitizeUUIDPrefix(prefix))
	if err != nil {
		m.errorf("Error querying evaluation: %s", err)
		return nil, 1
	}
	switch len(evals) {
	case 0:
		m.errorf("No evaluation(s) with prefix or id %q found", prefix)
		return nil, 1
	case 1:
	default:
		m.errorf("Prefix matched multiple evaluations\n\n%s", formatEvalList(evals, verbose))
		return nil, 1
	}
	eval, _, err := c.Evaluations().Info(evals[0].ID, nil)
	if err != nil {
		m.errorf("Error querying evaluation: %s", err)
		return nil, 1
	}
	return eval, 0
}

func formatEvalList(evals []*api.Evaluation, verbose bool) string {
	rows := []string{"ID|Priority|Triggered By|Job ID|Status|Placement Failures"}
	for _, e := range evals {
		rows = append(rows, fmt.Sprintf("%s|%d|%s|%s|%s|%t", shortID(e.ID, verbose), e.Priority,
			e.TriggeredBy, e.JobID, e.Status, len(e.FailedTGAllocs) > 0))
	}
	return formatList(rows)
}

// formatEvalStatus renders an evaluation, its allocations and its failed
// placements.
func formatEvalStatus(e *api.Evaluation, allocs []*api.AllocationListStub, verbose bool) string {
	sections := []string{formatEvalHeader(e, verbose)}
	if verbose && len(e.RelatedEvals) > 0 {
		sections = append(sections, "Related Evaluations\n"+formatRelatedEvals(e.RelatedEvals))
	}
	if len(allocs) > 0 {
		sections = append(sections, "Placed Allocations\n"+formatAllocStubs(allocs, verbose))
	}
	if len(e.FailedTGAllocs) > 0 {
		sections = append(sections, formatFailedPlacements(e, verbose))
	}
	return strings.Join(sections, "\n\n")
}

func formatEvalHeader(e *api.Evaluation, verbose bool) string {
	rows := []string{
		"ID|" + shortID(e.ID, verbose),
		"Create Time|" + formatAge(e.CreateTime, verbose),
		"Modify Time|" + formatAge(e.ModifyTime, verbose),
		"Status|" + e.Status,
		"Status Description|" + valueOr(e.StatusDescription, "<none>"),
		"Type|" + e.Type,
		"TriggeredBy|" + e.TriggeredBy,
	}
	optional := [][2]string{
		{"Job ID", e.JobID},
		{"Node ID", shortID(e.NodeID, verbose)},
		{"Deployment ID", shortID(e.DeploymentID, verbose)},
	}
	for _, kv := range optional {
		if kv[1] != "" {
			rows = append(rows, kv[0]+"|"+kv[1])
		}
	}
	rows = append(rows,
		"Namespace|"+e.Namespace,
		fmt.Sprintf("Priority|%d", e.Priority),
		fmt.Sprintf("Placement Failures|%t", len(e.FailedTGAllocs) > 0))
	links := [][2]string{
		{"Previous Eval", e.PreviousEval}, {"Next Eval", e.NextEval}, {"Blocked Eval", e.BlockedEval},
	}
	for _, kv := range links {
		if kv[1] != "" {
			rows = append(rows, kv[0]+"|"+shortID(kv[1], verbose))
		}
	}
	if !e.WaitUntil.IsZero() {
		rows = append(rows, "Wait Until|"+formatTime(e.WaitUntil))
	}
	return formatKV(rows)
}

func formatRelatedEvals(evals []*api.EvaluationStub) string {
	rows := []string{"ID|Priority|Triggered By|Node ID|Status|Description"}
	for _, e := range evals {
		rows = append(rows, fmt.Sprintf("%s|%d|%s|%s|%s|%s",
			e.ID, e.Priority, e.TriggeredBy, valueOr(e.NodeID, "<none>"), e.Status, e.StatusDescription))
	}
	return formatList(rows)
}

// formatFailedPlacements explains each task group that could not be placed.
func formatFailedPlacements(e *api.Evaluation, verbose bool) string {
	var b strings.Builder
	b.WriteString("==> Failed Placements")
	for _, tg := range sortedKeys(e.FailedTGAllocs) {
		metric := e.FailedTGAllocs[tg]
		failed := 1
		if metric != nil {
			failed += metric.CoalescedFailures
		}
		fmt.Fprintf(&b, "\nTask Group %q (failed to place %s):\n%s", tg, plural(failed, "allocation"),
			indent(formatAllocMetrics(metric, verbose), "  "))
	}
	if e.BlockedEval != "" {
		fmt.Fprintf(&b, "\n\nEvaluation %q waiting for additional capacity to place remainder",
			shortID(e.BlockedEval, verbose))
	}
	return b.String()
}
