package command

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

const jobStatusHelp = `Usage: drover job status [options] <job>

  Display status information about a job. If no job ID is given, a list of
  all known jobs will be displayed.

Status Options:

  -short
    Display short output. Used only when a single job is being queried, and
    drops verbose information about allocations.

  -all-allocs
    Display all allocations matching the job ID, including those from an
    older instance of the job.

  -json
    Output the job(s) in JSON format.

  -verbose
    Display full information.`

// jobStatusOptions are the parsed flags of `job status`.
type jobStatusOptions struct {
	verbose, json, short, allAllocs bool
}

// jobStatus implements `drover job status`.
func jobStatus(m *Meta, args []string) int {
	var o jobStatusOptions
	fs := m.FlagSet("job status")
	fs.BoolVar(&o.verbose, "verbose", false, "")
	fs.BoolVar(&o.json, "json", false, "")
	fs.BoolVar(&o.short, "short", false, "")
	fs.BoolVar(&o.allAllocs, "all-allocs", false, "")
	if code, ok := m.parse(fs, args, jobStatusHelp); !ok {
		return code
	}
	if fs.NArg() > 1 {
		return m.usageError("This command takes either no arguments or one: <job>", jobStatusHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	if fs.NArg() == 0 {
		return listJobs(m, c, o)
	}
	stub, code := lookupJob(m, c, fs.Arg(0))
	if stub == nil {
		return code
	}
	return showJob(m, c, stub, o)
}

func listJobs(m *Meta, c *api.Client, o jobStatusOptions) int {
	jobs, _, err := c.Jobs().List(nil)
	if err != nil {
		m.errorf("Error querying jobs: %s", err)
		return 1
	}
	if o.json {
		return m.printJSON(jobs)
	}
	if len(jobs) == 0 {
		m.outf("No running jobs")
		return 0
	}
	m.outf("%s", formatJobStubs(jobs, m.namespace == "*"))
	return 0
}

// formatJobStubs renders the job list table.
func formatJobStubs(jobs []*api.JobListStub, withNamespace bool) string {
	head := "ID|Type|Priority|Status|Submit Date"
	if withNamespace {
		head = "ID|Namespace|Type|Priority|Status|Submit Date"
	}
	rows := []string{head}
	for _, j := range jobs {
		cells := []string{j.ID}
		if withNamespace {
			cells = append(cells, jobStubNamespace(j))
		}
		cells = append(cells, jobTypeLabel(j), fmt.Sprint(j.Priority), jobStatusLabel(j.Status, j.Stop),
			formatUnixNano(j.SubmitTime))
		rows = append(rows, strings.Join(cells, "|"))
	}
	return formatList(rows)
}

func jobTypeLabel(j *api.JobListStub) string {
	switch {
	case j.Periodic:
		return j.Type + "/periodic"
	case j.ParameterizedJob:
		return j.Type + "/parameterized"
	}
	return j.Type
}

// jobStatusLabel shows a stopped job as "dead (stopped)".
func jobStatusLabel(status string, stopped bool) string {
	if stopped {
		return status + " (stopped)"
	}
	return status
}

func jobStubNamespace(j *api.JobListStub) string {
	if j.JobSummary != nil && j.JobSummary.Namespace != "" {
		return j.JobSummary.Namespace
	}
	return j.Namespace
}

// lookupJob resolves a job ID or prefix to one job. A nil stub means the
// command must exit with code (the problem has been printed). An exact ID
// is read first: that needs only read-job (all a workload identity has),
// where the prefix search needs list-jobs.
func lookupJob(m *Meta, c *api.Client, prefix string) (*api.JobListStub, int) {
	if job, _, err := c.Jobs().Info(prefix, nil); err == nil && job != nil && job.ID != nil && *job.ID == prefix {
		return jobStubOf(job), 0
	}
	jobs, _, err := c.Jobs().List(&api.QueryOptions{Prefix: prefix})
	if err != nil {
		m.errorf("Error querying job prefix: %s", err)
		return nil, 1
	}
	for _, j := range jobs {
		if j.ID == prefix {
			return j, 0
		}
	}
	switch len(jobs) {
	case 0:
		m.errorf("No job(s) with prefix or ID %q found", prefix)
		return nil, 1
	case 1:
		return jobs[0], 0
	}
	m.errorf("Prefix matched multiple jobs\n\n%s", formatJobStubs(jobs, true))
	return nil, 1
}

// jobStubOf is the list stub of job, for the commands that start from a
// lookup: what they read of a stub (the list endpoint's fields).
func jobStubOf(job *api.Job) *api.JobListStub {
	return &api.JobListStub{
		ID: *job.ID, ParentID: deref(job.ParentID), Name: deref(job.Name), Namespace: deref(job.Namespace),
		Type: deref(job.Type), Priority: derefInt(job.Priority), Status: deref(job.Status), Stop: ptrValue(job.Stop),
		Periodic:         job.Periodic != nil && (job.Periodic.Enabled == nil || *job.Periodic.Enabled),
		ParameterizedJob: job.ParameterizedJob != nil,
		JobModifyIndex:   ptrValue(job.JobModifyIndex), CreateIndex: ptrValue(job.CreateIndex),
		ModifyIndex: ptrValue(job.ModifyIndex), SubmitTime: ptrValue(job.SubmitTime),
	}
}

// ptrValue is *p, or the zero value for nil.
func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// jobQuery returns query options scoped to the job's namespace.
func jobQuery(stub *api.JobListStub) *api.QueryOptions {
	return &api.QueryOptions{Namespace: jobStubNamespace(stub)}
}

// jobDetails is everything `job status <id>` shows.
type jobDetails struct {
	Job              *api.Job
	Summary          *api.JobSummary
	Allocations      []*api.AllocationListStub
	Evaluations      []*api.Evaluation
	LatestDeployment *api.Deployment
}

func showJob(m *Meta, c *api.Client, stub *api.JobListStub, o jobStatusOptions) int {
	d, err := fetchJobDetails(c, stub, o.allAllocs)
	if err != nil {
		m.errorf("%s", err)
		return 1
	}
	if o.json {
		return m.printJSON(d)
	}
	m.outf("%s", formatJobHeader(d.Job))
	if d.Job.IsPeriodic() {
		m.outf("%s", formatKV([]string{"Next Periodic Launch|" + nextPeriodicLaunch(d.Job, time.Now())}))
	}
	if o.short {
		return 0
	}
	if d.Job.IsPeriodic() || d.Job.IsParameterized() {
		// A template runs nothing itself: show its children instead.
		children, err := childJobs(c, d.Job, jobQuery(stub))
		if err != nil {
			m.errorf("Error querying child jobs: %s", err)
			return 1
		}
		if d.Job.IsParameterized() {
			m.outf("\n%s", formatParameterized(d.Job.ParameterizedJob))
		}
		m.outf("\n%s", formatChildren(d.Job, children))
		return 0
	}
	m.outf("\n%s", formatJobDetails(d, o.verbose))
	return 0
}

func fetchJobDetails(c *api.Client, stub *api.JobListStub, allAllocs bool) (*jobDetails, error) {
	q := jobQuery(stub)
	job, _, err := c.Jobs().Info(stub.ID, q)
	if err != nil {
		return nil, fmt.Errorf("Error querying job: %w", err)
	}
	d := &jobDetails{Job: job}
	if d.Summary, _, err = c.Jobs().Summary(stub.ID, q); err != nil {
		return nil, fmt.Errorf("Error querying job summary: %w", err)
	}
	if d.Allocations, _, err = c.Jobs().Allocations(stub.ID, allAllocs, q); err != nil {
		return nil, fmt.Errorf("Error querying job allocations: %w", err)
	}
	if d.Evaluations, _, err = c.Jobs().Evaluations(stub.ID, q); err != nil {
		return nil, fmt.Errorf("Error querying job evaluations: %w", err)
	}
	if d.LatestDeployment, _, err = c.Jobs().LatestDeployment(stub.ID, q); err != nil {
		return nil, fmt.Errorf("Error querying latest job deployment: %w", err)
	}
	return d, nil
}

// formatJobHeader renders the key/value summary of a job.
func formatJobHeader(j *api.Job) string {
	return formatKV([]string{
		"ID|" + deref(j.ID),
		"Name|" + deref(j.Name),
		"Submit Date|" + formatUnixNano(derefInt64(j.SubmitTime)),
		"Type|" + deref(j.Type),
		fmt.Sprintf("Priority|%d", derefInt(j.Priority)),
		"Datacenters|" + strings.Join(j.Datacenters, ","),
		"Namespace|" + deref(j.Namespace),
		"Node Pool|" + deref(j.NodePool),
		"Status|" + jobStatusLabel(deref(j.Status), j.Stop != nil && *j.Stop),
		fmt.Sprintf("Periodic|%t", j.IsPeriodic()),
		fmt.Sprintf("Parameterized|%t", j.IsParameterized()),
	})
}

// formatJobDetails renders the Summary, Placement Failure, Latest
// Deployment and Allocations sections.
func formatJobDetails(d *jobDetails, verbose bool) string {
	sections := []string{"Summary\n" + formatJobSummary(d.Summary)}
	if pf := formatPlacementFailures(d.Evaluations, verbose); pf != "" {
		sections = append(sections, pf)
	}
	if d.LatestDeployment != nil {
		sections = append(sections, "Latest Deployment\n"+formatDeployment(d.LatestDeployment, verbose))
	}
	sections = append(sections, "Allocations\n"+formatAllocStubs(d.Allocations, verbose))
	return strings.Join(sections, "\n\n")
}

// formatJobSummary renders one row of allocation counts per task group.
func formatJobSummary(s *api.JobSummary) string {
	rows := []string{"Task Group|Queued|Starting|Running|Failed|Complete|Lost|Unknown"}
	if s != nil {
		for _, tg := range sortedKeys(s.Summary) {
			c := s.Summary[tg]
			rows = append(rows, fmt.Sprintf("%s|%d|%d|%d|%d|%d|%d|%d",
				tg, c.Queued, c.Starting, c.Running, c.Failed, c.Complete, c.Lost, c.Unknown))
		}
	}
	return formatList(rows)
}

// formatPlacementFailures explains the failed placements of the newest
// evaluation that has any, when a blocked evaluation is still waiting.
func formatPlacementFailures(evals []*api.Evaluation, verbose bool) string {
	blocked := false
	for _, e := range evals {
		blocked = blocked || e.Status == "blocked"
	}
	if !blocked {
		return ""
	}
	sorted := append([]*api.Evaluation(nil), evals...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].CreateIndex > sorted[j].CreateIndex })
	for _, e := range sorted {
		if len(e.FailedTGAllocs) == 0 {
			continue
		}
		var b strings.Builder
		b.WriteString("Placement Failure")
		for _, tg := range sortedKeys(e.FailedTGAllocs) {
			fmt.Fprintf(&b, "\nTask Group %q:\n%s", tg, indent(formatAllocMetrics(e.FailedTGAllocs[tg], verbose), "  "))
		}
		return b.String()
	}
	return ""
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func derefInt64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
