package command

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Timing of the monitors. Package variables so tests can shorten them.
var (
	// evalPollInterval is the pause between two polls of an evaluation.
	evalPollInterval = time.Second
	// maxNextEvalWait caps the wait before following an eval's NextEval.
	maxNextEvalWait = 10 * time.Second
)

// Evaluation statuses that end the eval monitor.
const (
	evalStatusPending  = "pending"
	evalStatusComplete = "complete"
	evalStatusFailed   = "failed"
	evalStatusCanceled = "canceled"
)

// monitor follows an evaluation and then the deployment it belongs to,
// printing progress lines like Nomad's CLI.
type monitor struct {
	out     io.Writer
	errOut  io.Writer
	client  *api.Client
	verbose bool
	tty     bool
}

func newMonitor(m *Meta, c *api.Client, verbose bool) *monitor {
	return &monitor{out: m.Stdout, errOut: m.Stderr, client: c, verbose: verbose, tty: isTerminal(m.Stdout)}
}

// header prints a "==> <time>: msg" line.
func (mon *monitor) header(format string, a ...any) {
	fmt.Fprintf(mon.out, "==> %s: %s\n", formatTime(now()), fmt.Sprintf(format, a...))
}

// line prints an indented "    <time>: msg" line.
func (mon *monitor) line(format string, a ...any) {
	fmt.Fprintf(mon.out, "    %s: %s\n", formatTime(now()), fmt.Sprintf(format, a...))
}

// evalState is what the monitor remembers of one poll.
type evalState struct {
	status      string
	jobID       string
	nodeID      string
	deployment  string
	createIndex uint64
	allocs      map[string]*allocState
}

// allocState is the part of an allocation the monitor reports on.
type allocState struct {
	id, group, node string
	desired, client string
	clientDesc      string
	createIndex     uint64
}

func newEvalState(eval *api.Evaluation, allocs []*api.AllocationListStub) *evalState {
	s := &evalState{
		status:      eval.Status,
		jobID:       eval.JobID,
		nodeID:      eval.NodeID,
		deployment:  eval.DeploymentID,
		createIndex: eval.CreateIndex,
		allocs:      make(map[string]*allocState, len(allocs)),
	}
	for _, a := range allocs {
		s.allocs[a.ID] = &allocState{
			id: a.ID, group: a.TaskGroup, node: a.NodeID,
			desired: a.DesiredStatus, client: a.ClientStatus,
			clientDesc: a.ClientDescription, createIndex: a.CreateIndex,
		}
	}
	return s
}

// evalUpdateLines lists what changed between two polls of an evaluation.
// prev is nil on the first poll, which is compared with a pending eval.
func evalUpdateLines(prev, cur *evalState, verbose bool) []string {
	var lines []string
	first := prev == nil
	if first {
		prev = &evalState{status: evalStatusPending}
		switch {
		case cur.jobID != "":
			lines = append(lines, fmt.Sprintf("Evaluation triggered by job %q", cur.jobID))
		case cur.nodeID != "":
			lines = append(lines, fmt.Sprintf("Evaluation triggered by node %q", shortID(cur.nodeID, verbose)))
		}
	}
	if cur.deployment != "" && prev.deployment == "" {
		lines = append(lines, fmt.Sprintf("Evaluation within deployment: %q", shortID(cur.deployment, verbose)))
	}
	lines = append(lines, allocUpdateLines(prev, cur, verbose)...)
	if cur.status != prev.status {
		lines = append(lines, fmt.Sprintf("Evaluation status changed: %q -> %q", prev.status, cur.status))
	}
	return lines
}

func allocUpdateLines(prev, cur *evalState, verbose bool) []string {
	ids := make([]string, 0, len(cur.allocs))
	for id := range cur.allocs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := cur.allocs[ids[i]], cur.allocs[ids[j]]
		if a.createIndex != b.createIndex {
			return a.createIndex < b.createIndex
		}
		return a.id < b.id
	})
	var lines []string
	for _, id := range ids {
		a := cur.allocs[id]
		old, seen := prev.allocs[id]
		if !seen {
			verb := "created"
			if a.createIndex < cur.createIndex {
				verb = "modified"
			}
			lines = append(lines, fmt.Sprintf("Allocation %q %s: node %q, group %q",
				shortID(a.id, verbose), verb, shortID(a.node, verbose), a.group))
			continue
		}
		if old.client != a.client {
			msg := fmt.Sprintf("Allocation %q status changed: %q -> %q",
				shortID(a.id, verbose), old.client, a.client)
			if a.clientDesc != "" {
				msg += fmt.Sprintf(" (%s)", a.clientDesc)
			}
			lines = append(lines, msg)
		}
	}
	return lines
}

func evalTerminal(status string) bool {
	switch status {
	case evalStatusComplete, evalStatusFailed, evalStatusCanceled:
		return true
	}
	return false
}

// monitorEval follows evalID (and any NextEval) to completion, then the
// deployment it names. It returns the CLI exit code: 0 ok, 1 error or a
// deployment that did not succeed, 2 placement failures.
func (mon *monitor) monitorEval(evalID string) int {
	mon.header("Monitoring evaluation %q", shortID(evalID, mon.verbose))
	eval, code := mon.pollEval(evalID)
	if eval == nil {
		return code
	}
	if eval.NextEval != "" {
		wait := min(eval.Wait, maxNextEvalWait)
		mon.line("Monitoring next evaluation %q in %s", shortID(eval.NextEval, mon.verbose), wait)
		time.Sleep(wait)
		return mon.monitorEval(eval.NextEval)
	}
	if eval.DeploymentID == "" {
		return code
	}
	status, err := mon.monitorDeployment(eval.DeploymentID, 0, eval.Wait)
	if err != nil || status != api.DeploymentStatusSuccessful {
		return 1
	}
	return 0
}

// pollEval polls evalID until it is terminal and reports how it finished.
// eval is nil when polling failed.
func (mon *monitor) pollEval(evalID string) (eval *api.Evaluation, code int) {
	var prev *evalState
	for {
		e, _, err := mon.client.Evaluations().Info(evalID, nil)
		if err != nil {
			fmt.Fprintf(mon.errOut, "No evaluation with id %q found: %s\n", evalID, err)
			return nil, 1
		}
		allocs, _, err := mon.client.Evaluations().Allocations(evalID, nil)
		if err != nil {
			fmt.Fprintf(mon.errOut, "Error reading allocations of evaluation %q: %s\n", evalID, err)
			return nil, 1
		}
		cur := newEvalState(e, allocs)
		for _, l := range evalUpdateLines(prev, cur, mon.verbose) {
			mon.line("%s", l)
		}
		prev = cur
		if evalTerminal(e.Status) {
			return e, mon.evalFinished(e)
		}
		time.Sleep(evalPollInterval)
	}
}

// evalFinished prints the final eval line and placement failures.
func (mon *monitor) evalFinished(e *api.Evaluation) int {
	id := shortID(e.ID, mon.verbose)
	if len(e.FailedTGAllocs) == 0 {
		mon.header("Evaluation %q finished with status %q", id, e.Status)
		if e.Status == evalStatusFailed {
			return 1
		}
		return 0
	}
	mon.header("Evaluation %q finished with status %q but failed to place all allocations:", id, e.Status)
	for _, tg := range sortedKeys(e.FailedTGAllocs) {
		metric := e.FailedTGAllocs[tg]
		failed := 1
		if metric != nil {
			failed += metric.CoalescedFailures
		}
		mon.line("Task Group %q (failed to place %s):", tg, plural(failed, "allocation"))
		fmt.Fprintln(mon.out, indent(formatAllocMetrics(metric, mon.verbose), "      "))
	}
	if e.BlockedEval != "" {
		mon.line("Evaluation %q waiting for additional capacity to place remainder",
			shortID(e.BlockedEval, mon.verbose))
	}
	return 2
}

// formatAllocMetrics explains why placements failed, one "* " line per
// reason.
func formatAllocMetrics(metric *api.AllocationMetric, verbose bool) string {
	if metric == nil {
		return "* No placement metrics available"
	}
	var lines []string
	add := func(format string, a ...any) { lines = append(lines, "* "+fmt.Sprintf(format, a...)) }
	if metric.NodesEvaluated == 0 {
		add("No nodes were eligible for evaluation")
	}
	for _, dc := range sortedKeys(metric.NodesAvailable) {
		if metric.NodesAvailable[dc] == 0 {
			add("No nodes are available in datacenter %q", dc)
		}
	}
	for _, c := range sortedKeys(metric.ClassFiltered) {
		add("Class %q: %s excluded by filter", c, plural(metric.ClassFiltered[c], "node"))
	}
	for _, c := range sortedKeys(metric.ConstraintFiltered) {
		add("Constraint %q: %s excluded by filter", c, plural(metric.ConstraintFiltered[c], "node"))
	}
	if metric.NodesExhausted > 0 {
		add("Resources exhausted on %s", plural(metric.NodesExhausted, "node"))
	}
	for _, c := range sortedKeys(metric.ClassExhausted) {
		add("Class %q exhausted on %s", c, plural(metric.ClassExhausted[c], "node"))
	}
	for _, d := range sortedKeys(metric.DimensionExhausted) {
		add("Dimension %q exhausted on %s", d, plural(metric.DimensionExhausted[d], "node"))
	}
	for _, q := range metric.QuotaExhausted {
		add("Quota limit hit %q", q)
	}
	if verbose {
		for _, s := range metric.ScoreMetaData {
			add("Node %q scored %.3f", s.NodeID, s.NormScore)
		}
	}
	if len(lines) == 0 {
		return "* No reason reported by the scheduler"
	}
	return strings.Join(lines, "\n")
}
