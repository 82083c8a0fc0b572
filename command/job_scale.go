package command

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

const jobScaleHelp = `Usage: drover job scale [options] <job> [<group>] <count>

  Perform a scaling action by altering the count within a job group.

  Upon successful job submission, this command will immediately enter an
  interactive monitor. This is useful to watch Drover's internals make
  scheduling decisions and place the submitted work onto nodes. The monitor
  will end once job placement is done. It is safe to exit the monitor early
  using ctrl+c.

Scale Options:

  -detach
    Return immediately instead of entering monitor mode. After job scaling,
    the evaluation ID will be printed to the screen.

  -verbose
    Display full information.`

const jobScalingEventsHelp = `Usage: drover job scaling-events [options] <job>

  List the scaling events for the specified job.

Scaling Events Options:

  -verbose
    Display full information.`

// jobScale implements `drover job scale`.
func jobScale(m *Meta, args []string) int {
	fs := m.FlagSet("job scale")
	var detach, verbose bool
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	if code, ok := m.parse(fs, args, jobScaleHelp); !ok {
		return code
	}
	if fs.NArg() < 2 || fs.NArg() > 3 {
		return m.usageError("This command takes two or three arguments: <job> [<group>] <count>", jobScaleHelp)
	}
	count, err := strconv.Atoi(fs.Arg(fs.NArg() - 1))
	if err != nil {
		m.errorf("Failed to convert count string to int: %s", err)
		return 1
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	stub, code := lookupJob(m, c, fs.Arg(0))
	if stub == nil {
		return code
	}
	group := ""
	if fs.NArg() == 3 {
		group = fs.Arg(1)
	} else {
		job, _, err := c.Jobs().Info(stub.ID, jobQuery(stub))
		if err != nil {
			m.errorf("Error querying job: %s", err)
			return 1
		}
		if len(job.TaskGroups) != 1 {
			m.errorf("Group name required")
			return 1
		}
		group = deref(job.TaskGroups[0].Name)
	}
	ns := jobStubNamespace(stub)
	msg := "submitted using the Drover CLI"
	resp, _, err := c.Jobs().Scale(stub.ID, group, &count, msg, false, nil, &api.WriteOptions{Namespace: ns})
	if err != nil {
		m.errorf("Error submitting scaling request: %s", err)
		return 1
	}
	if resp.EvalID == "" {
		return 0
	}
	if detach {
		m.outf("Job scale successful")
		m.outf("Evaluation ID: %s", resp.EvalID)
		return 0
	}
	return followEval(m, c, ns, resp.EvalID, false, verbose)
}

// jobScalingEvents implements `drover job scaling-events`.
func jobScalingEvents(m *Meta, args []string) int {
	fs := m.FlagSet("job scaling-events")
	var verbose bool
	fs.BoolVar(&verbose, "verbose", false, "")
	if code, ok := m.parse(fs, args, jobScalingEventsHelp); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return m.usageError("This command takes one argument: <job>", jobScalingEventsHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	stub, code := lookupJob(m, c, fs.Arg(0))
	if stub == nil {
		return code
	}
	status, _, err := c.Jobs().ScaleStatus(stub.ID, jobQuery(stub))
	if err != nil {
		m.errorf("Error listing scaling events: %s", err)
		return 1
	}
	out := formatScalingEvents(status, verbose)
	if out == "" {
		m.outf("No events found")
		return 0
	}
	m.outf("%s", out)
	return 0
}

// formatScalingEvents renders the scaling events of every group, newest
// first; "" when there are none.
func formatScalingEvents(s *api.JobScaleStatusResponse, verbose bool) string {
	type row struct {
		group string
		ev    api.ScalingEvent
	}
	var rows []row
	for g, tg := range s.TaskGroups {
		for _, e := range tg.Events {
			rows = append(rows, row{g, e})
		}
	}
	if len(rows) == 0 {
		return ""
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].ev.Time > rows[j].ev.Time })
	head := "Task Group|Count|PrevCount|Date"
	if verbose {
		head = "Task Group|Count|PrevCount|Error|Date|Message|Eval ID|Meta"
	}
	lines := []string{head}
	for _, r := range rows {
		count := ""
		if r.ev.Count != nil {
			count = strconv.FormatInt(*r.ev.Count, 10)
		}
		date := formatTime(time.Unix(0, int64(r.ev.Time)))
		cells := []string{r.group, count, strconv.FormatInt(r.ev.PreviousCount, 10)}
		if verbose {
			evalID := ""
			if r.ev.EvalID != nil {
				evalID = *r.ev.EvalID
			}
			var meta []string
			for _, k := range sortedKeys(r.ev.Meta) {
				meta = append(meta, fmt.Sprintf("%s=%v", k, r.ev.Meta[k]))
			}
			cells = append(cells, strconv.FormatBool(r.ev.Error), date, r.ev.Message, evalID, strings.Join(meta, ","))
		} else {
			cells = append(cells, date)
		}
		lines = append(lines, strings.Join(cells, "|"))
	}
	return formatList(lines)
}
