package command

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

const allocStatusHelp = `Usage: drover alloc status [options] <allocation>

  Display information about existing allocations and its tasks. This command
  accepts an allocation ID or prefix as the sole argument.

Alloc Status Options:

  -short
    Display short output. Shows only the most recent task event.

  -verbose
    Show full information.

  -json
    Output the allocation in its JSON format.`

// allocStatus implements `drover alloc status`.
func allocStatus(m *Meta, args []string) int {
	fs := m.FlagSet("alloc status")
	var verbose, jsonOut, short bool
	fs.BoolVar(&verbose, "verbose", false, "")
	fs.BoolVar(&jsonOut, "json", false, "")
	fs.BoolVar(&short, "short", false, "")
	if code, ok := m.parse(fs, args, allocStatusHelp); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return m.usageError("This command takes one argument: <allocation>", allocStatusHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	alloc, code := lookupAlloc(m, c, fs.Arg(0), verbose)
	if alloc == nil {
		return code
	}
	if jsonOut {
		return m.printJSON(alloc)
	}
	m.outf("%s", formatAllocHeader(alloc, verbose))
	if verbose && alloc.Metrics != nil {
		m.outf("\nPlacement Metrics\n%s", formatAllocMetrics(alloc.Metrics, true))
	}
	if short {
		m.outf("\n%s", formatTaskSummary(alloc))
		return 0
	}
	for _, name := range sortedKeys(alloc.TaskStates) {
		m.outf("\n%s", formatTaskState(name, alloc.TaskStates[name], verbose))
	}
	return 0
}

// lookupAlloc resolves an allocation ID or prefix. A nil allocation means
// the command must exit with code.
func lookupAlloc(m *Meta, c *api.Client, prefix string, verbose bool) (*api.Allocation, int) {
	if len(prefix) < 2 {
		m.errorf("Identifier must contain at least two characters.")
		return nil, 1
	}
	stubs, _, err := c.Allocations().PrefixList(sanitizeUUIDPrefix(prefix))
	if err != nil {
		m.errorf("Error querying allocation: %s", err)
		return nil, 1
	}
	switch len(stubs) {
	case 0:
		m.errorf("No allocation(s) with prefix or id %q found", prefix)
		return nil, 1
	case 1:
	default:
		m.errorf("Prefix matched multiple allocations\n\n%s", formatAllocMatches(stubs, verbose))
		return nil, 1
	}
	alloc, _, err := c.Allocations().Info(stubs[0].ID, &api.QueryOptions{Namespace: stubs[0].Namespace})
	if err != nil {
		m.errorf("Error querying allocation: %s", err)
		return nil, 1
	}
	return alloc, 0
}

func formatAllocMatches(stubs []*api.AllocationListStub, verbose bool) string {
	rows := []string{"ID|Eval ID|Job ID|Task Group|Desired Status|Client Status"}
	for _, a := range stubs {
		rows = append(rows, strings.Join([]string{shortID(a.ID, verbose), shortID(a.EvalID, verbose),
			a.JobID, a.TaskGroup, a.DesiredStatus, a.ClientStatus}, "|"))
	}
	return formatList(rows)
}

// formatAllocHeader renders the key/value summary of an allocation.
func formatAllocHeader(a *api.Allocation, verbose bool) string {
	var version uint64
	if a.Job != nil && a.Job.Version != nil {
		version = *a.Job.Version
	}
	rows := []string{
		"ID|" + shortID(a.ID, verbose),
		"Eval ID|" + shortID(a.EvalID, verbose),
		"Name|" + a.Name,
		"Node ID|" + shortID(a.NodeID, verbose),
		"Node Name|" + a.NodeName,
		"Job ID|" + a.JobID,
		fmt.Sprintf("Job Version|%d", version),
		"Client Status|" + a.ClientStatus,
		"Client Description|" + valueOr(a.ClientDescription, "<none>"),
		"Desired Status|" + a.DesiredStatus,
		"Desired Description|" + valueOr(a.DesiredDescription, "<none>"),
		"Created|" + formatAge(a.CreateTime, verbose),
		"Modified|" + formatAge(a.ModifyTime, verbose),
	}
	if a.DeploymentID != "" {
		rows = append(rows, "Deployment ID|"+shortID(a.DeploymentID, verbose),
			"Deployment Health|"+deploymentHealth(a.DeploymentStatus))
		if a.DeploymentStatus != nil && a.DeploymentStatus.Canary {
			rows = append(rows, "Canary|true")
		}
	}
	if a.PreviousAllocation != "" {
		rows = append(rows, "Replacement Of|"+shortID(a.PreviousAllocation, verbose))
	}
	if a.NextAllocation != "" {
		rows = append(rows, "Replaced By|"+shortID(a.NextAllocation, verbose))
	}
	if a.FollowupEvalID != "" {
		rows = append(rows, "Follow-up Eval|"+shortID(a.FollowupEvalID, verbose))
	}
	return formatKV(rows)
}

func deploymentHealth(s *api.AllocDeploymentStatus) string {
	switch {
	case s == nil || s.Healthy == nil:
		return "unset"
	case *s.Healthy:
		return "healthy"
	default:
		return "unhealthy"
	}
}

// formatTaskSummary renders one line per task with its latest event.
func formatTaskSummary(a *api.Allocation) string {
	rows := []string{"Name|State|Last Event|Time"}
	for _, name := range sortedKeys(a.TaskStates) {
		s := a.TaskStates[name]
		event, at := "<none>", "N/A"
		if s != nil && len(s.Events) > 0 {
			last := s.Events[len(s.Events)-1]
			event, at = last.Type, formatUnixNano(last.Time)
		}
		state := ""
		if s != nil {
			state = s.State
		}
		rows = append(rows, strings.Join([]string{name, state, event, at}, "|"))
	}
	return "Tasks\n" + formatList(rows)
}

// maxRecentEvents is how many task events are shown without -verbose.
const maxRecentEvents = 10

// formatTaskState renders a task's state and its recent events.
func formatTaskState(name string, s *api.TaskState, verbose bool) string {
	if s == nil {
		return fmt.Sprintf("Task %q has no state", name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Task %q is %q\n", name, s.State)
	b.WriteString("Task Events:\n")
	b.WriteString(formatKV([]string{
		"Started At|" + formatTime(s.StartedAt),
		"Finished At|" + formatTime(s.FinishedAt),
		fmt.Sprintf("Total Restarts|%d", s.Restarts),
		"Last Restart|" + formatTime(s.LastRestart),
	}))
	events := append([]*api.TaskEvent(nil), s.Events...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].Time > events[j].Time })
	if !verbose && len(events) > maxRecentEvents {
		events = events[:maxRecentEvents]
	}
	rows := []string{"Time|Type|Description"}
	for _, e := range events {
		desc := valueOr(e.DisplayMessage, e.Message)
		rows = append(rows, strings.Join([]string{formatUnixNano(e.Time), e.Type, desc}, "|"))
	}
	b.WriteString("\n\nRecent Events:\n")
	b.WriteString(formatList(rows))
	return b.String()
}

// formatAllocStubs renders the allocation table of job, node and
// deployment status, newest first.
func formatAllocStubs(allocs []*api.AllocationListStub, verbose bool) string {
	if len(allocs) == 0 {
		return "No allocations placed"
	}
	sorted := append([]*api.AllocationListStub(nil), allocs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].CreateIndex > sorted[j].CreateIndex })
	head := "ID|Node ID|Task Group|Version|Desired|Status|Created|Modified"
	if verbose {
		head = "ID|Eval ID|Node ID|Node Name|Task Group|Version|Desired|Status|Created|Modified"
	}
	rows := []string{head}
	for _, a := range sorted {
		cells := []string{shortID(a.ID, verbose)}
		if verbose {
			cells = append(cells, a.EvalID)
		}
		cells = append(cells, shortID(a.NodeID, verbose))
		if verbose {
			cells = append(cells, a.NodeName)
		}
		cells = append(cells, a.TaskGroup, fmt.Sprint(a.JobVersion), a.DesiredStatus, a.ClientStatus,
			formatAge(a.CreateTime, verbose), formatAge(a.ModifyTime, verbose))
		rows = append(rows, strings.Join(cells, "|"))
	}
	return formatList(rows)
}

// allocStub converts a full allocation to its list form.
func allocStub(a *api.Allocation) *api.AllocationListStub {
	s := &api.AllocationListStub{
		ID: a.ID, EvalID: a.EvalID, Name: a.Name, Namespace: a.Namespace,
		NodeID: a.NodeID, NodeName: a.NodeName, JobID: a.JobID, TaskGroup: a.TaskGroup,
		DesiredStatus: a.DesiredStatus, ClientStatus: a.ClientStatus,
		CreateIndex: a.CreateIndex, ModifyIndex: a.ModifyIndex,
		CreateTime: a.CreateTime, ModifyTime: a.ModifyTime,
	}
	if a.Job != nil && a.Job.Version != nil {
		s.JobVersion = *a.Job.Version
	}
	return s
}
