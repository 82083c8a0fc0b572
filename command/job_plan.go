package command

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

const jobPlanHelp = `Usage: drover job plan [options] <path>
Alias: drover plan

  Plan invokes a dry-run of the scheduler to determine the effects of
  submitting either a new or updated version of a job. The plan will not
  result in any changes to the cluster but gives insight into whether the
  job could be run successfully and how it would affect existing
  allocations. If the supplied path is "-", the jobfile is read from stdin.

  A job modify index is returned with the plan. This value can be used when
  submitting the job using "drover job run -check-index", which will check
  that the job was not modified between the plan and run command before
  invoking the scheduler.

  Exit codes: 0 when no allocations would be created or destroyed; 1 when
  allocations would be created or destroyed; 255 on an error.

Plan Options:

  -diff
    Determines whether the diff between the remote job and planned job is
    shown. Defaults to true.

  -policy-override
    Sets the flag to force override any soft mandatory Sentinel policies.

  -verbose
    Increase diff verbosity.

`

// Plan exit codes.
const (
	planNoChange = 0
	planChanges  = 1
	planError    = 255
)

// jobPlan implements `drover job plan`.
func jobPlan(m *Meta, args []string) int {
	var file jobFileFlags
	var diff, verbose, policyOverride bool
	fs := m.FlagSet("job plan")
	file.register(fs)
	fs.BoolVar(&diff, "diff", true, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	fs.BoolVar(&policyOverride, "policy-override", false, "")
	help := jobPlanHelp + jobFileFlagsHelp
	if code, ok := m.parse(fs, args, help); !ok {
		if code != 0 {
			return planError
		}
		return code
	}
	if fs.NArg() != 1 {
		m.usageError("This command takes one argument: <path>", help)
		return planError
	}
	path := fs.Arg(0)
	job, _, err := file.load(m.Stdin, path)
	if err != nil {
		m.errorf("Error getting job struct: %s", err)
		return planError
	}
	c, ok := m.mustClient()
	if !ok {
		return planError
	}
	forceJobScope(c, job)
	resp, _, err := c.Jobs().PlanOpts(job, &api.PlanOptions{Diff: true, PolicyOverride: policyOverride}, nil)
	if err != nil {
		m.errorf("Error during plan: %s", err)
		return planError
	}
	m.outf("%s", formatPlan(resp, diff, verbose))
	m.outf("%s", formatCheckIndexHint(resp.JobModifyIndex, file.flagArgs()+path))
	return planExitCode(resp)
}

// formatPlan renders the diff, the scheduler dry-run, preemptions and
// warnings of a plan.
func formatPlan(resp *api.JobPlanResponse, diff, verbose bool) string {
	var sections []string
	if diff && resp.Diff != nil {
		sections = append(sections, formatJobDiff(resp.Diff, resp.Annotations, verbose))
	}
	sections = append(sections, formatDryRun(resp, verbose))
	if resp.Annotations != nil && len(resp.Annotations.PreemptedAllocs) > 0 {
		sections = append(sections, "Preemptions:\n"+formatAllocStubs(resp.Annotations.PreemptedAllocs, verbose))
	}
	if w := strings.TrimSpace(resp.Warnings); w != "" {
		sections = append(sections, "Job Warnings:\n"+w)
	}
	return strings.Join(sections, "\n\n")
}

// formatDryRun renders the "Scheduler dry-run" section: placement success
// or failures, then the scheduler's desired changes per task group.
func formatDryRun(resp *api.JobPlanResponse, verbose bool) string {
	var b strings.Builder
	b.WriteString("Scheduler dry-run:\n")
	if len(resp.FailedTGAllocs) == 0 {
		b.WriteString("- All tasks successfully allocated.")
	} else {
		b.WriteString("- WARNING: Failed to place all allocations.")
		for _, tg := range sortedKeys(resp.FailedTGAllocs) {
			metric := resp.FailedTGAllocs[tg]
			failed := 1
			if metric != nil {
				failed += metric.CoalescedFailures
			}
			fmt.Fprintf(&b, "\n  Task Group %q (failed to place %s):\n", tg, plural(failed, "allocation"))
			b.WriteString(indent(formatAllocMetrics(metric, verbose), "    "))
		}
	}
	if resp.Annotations != nil {
		for _, tg := range sortedKeys(resp.Annotations.DesiredTGUpdates) {
			counts := formatUpdateCounts(updatesFromAnnotations(resp.Annotations.DesiredTGUpdates[tg]))
			fmt.Fprintf(&b, "\n- Task Group %q: %s", tg, valueOr(counts, "no changes"))
		}
	}
	for _, e := range resp.CreatedEvals {
		if e != nil && e.TriggeredBy == "rolling-update" {
			fmt.Fprintf(&b, "\n- Rolling update, next evaluation will be in %s.", e.Wait)
		}
	}
	return b.String()
}

// formatCheckIndexHint suggests the guarded `job run` command.
func formatCheckIndexHint(index uint64, fileArgs string) string {
	return fmt.Sprintf(`
Job Modify Index: %d
To submit the job with version verification run:

drover job run -check-index %d %s

With -check-index the job runs only if its modify index on the server still
matches. A different index means someone changed the job since this plan,
and the plan may no longer hold.`, index, index, fileArgs)
}

// planExitCode is 1 when the plan creates, stops, migrates, destructively
// updates or canaries any allocation, else 0.
func planExitCode(resp *api.JobPlanResponse) int {
	if resp.Diff == nil || resp.Diff.Type == diffNone || resp.Annotations == nil {
		return planNoChange
	}
	for _, u := range resp.Annotations.DesiredTGUpdates {
		if u != nil && u.Place+u.Stop+u.Migrate+u.DestructiveUpdate+u.Canary > 0 {
			return planChanges
		}
	}
	return planNoChange
}
