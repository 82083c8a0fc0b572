package command

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"
)

const jobRunHelp = `Usage: drover job run [options] <path>
Alias: drover run

  Starts running a new job or updates an existing job using the
  specification located at <path>. This is the main command used to
  interact with Drover. If the supplied path is "-", the jobfile is read
  from stdin.

  Upon successful job submission, this command will immediately enter an
  interactive monitor, showing the evaluation and, for jobs with an update
  block, the deployment until it finishes.

  Exit codes: 0 on success; 2 when the scheduler could not place all
  allocations; 1 on any other error, including a deployment that did not
  succeed.

Run Options:

  -check-index
    If set, the job is only registered or updated if the passed job modify
    index matches the server side version. If a check-index value of zero is
    passed, the job is only registered if it does not yet exist.

  -detach
    Return immediately instead of entering monitor mode. After job
    submission, the evaluation ID will be printed to the screen.

  -eval-priority
    Override the priority of the evaluations produced as a result of this
    job submission.

  -output
    Output the JSON that would be submitted to the HTTP API without
    submitting the job.

  -policy-override
    Sets the flag to force override any soft mandatory Sentinel policies.

  -preserve-counts
    If set, the existing task group counts will be preserved when updating
    a job.

  -verbose
    Display full information.

`

// enforceIndexRe extracts the index-enforcement message from a server
// error ("Unexpected response code: 500 (Enforcing job modify index ...)").
var enforceIndexRe = regexp.MustCompile(`\((` + api.RegisterEnforceIndexErrPrefix + `.*)\)`)

// jobRunOptions are the parsed flags of `job run`.
type jobRunOptions struct {
	file           jobFileFlags
	detach         bool
	verbose        bool
	output         bool
	checkIndex     string
	evalPriority   int
	policyOverride bool
	preserveCounts bool
}

// jobRun implements `drover job run`.
func jobRun(m *Meta, args []string) int {
	var o jobRunOptions
	fs := m.FlagSet("job run")
	o.file.register(fs)
	fs.BoolVar(&o.detach, "detach", false, "")
	fs.BoolVar(&o.verbose, "verbose", false, "")
	fs.BoolVar(&o.output, "output", false, "")
	fs.StringVar(&o.checkIndex, "check-index", "", "")
	fs.IntVar(&o.evalPriority, "eval-priority", 0, "")
	fs.BoolVar(&o.policyOverride, "policy-override", false, "")
	fs.BoolVar(&o.preserveCounts, "preserve-counts", false, "")
	help := jobRunHelp + jobFileFlagsHelp
	if code, ok := m.parse(fs, args, help); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return m.usageError("This command takes one argument: <path>", help)
	}
	job, sub, err := o.file.load(m.Stdin, fs.Arg(0))
	if err != nil {
		m.errorf("Error getting job struct: %s", err)
		return 1
	}
	if o.output {
		return m.printJSON(struct{ Job *api.Job }{job})
	}
	return o.submit(m, job, sub)
}

// submit registers the job and monitors the result.
func (o *jobRunOptions) submit(m *Meta, job *api.Job, sub *api.JobSubmission) int {
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	forceJobScope(c, job)
	opts := &api.RegisterOptions{
		PolicyOverride: o.policyOverride,
		PreserveCounts: o.preserveCounts,
		EvalPriority:   o.evalPriority,
		Submission:     sub,
	}
	if o.checkIndex != "" {
		idx, err := strconv.ParseUint(o.checkIndex, 10, 64)
		if err != nil {
			m.errorf("Error parsing check-index value %q: %v", o.checkIndex, err)
			return 1
		}
		opts.EnforceIndex, opts.ModifyIndex = true, idx
	}
	resp, _, err := c.Jobs().RegisterOpts(job, opts, nil)
	if err != nil {
		return reportRegisterError(m, err)
	}
	if resp.Warnings != "" {
		m.outf("Job Warnings:\n%s\n", strings.TrimSpace(resp.Warnings))
	}
	if o.detach || job.IsPeriodic() || job.IsParameterized() {
		m.outf("Job registration successful")
		if resp.EvalID != "" {
			m.outf("Evaluation ID: %s", resp.EvalID)
		}
		return 0
	}
	if resp.EvalID == "" {
		return 0
	}
	return newMonitor(m, c, o.verbose).monitorEval(resp.EvalID)
}

func reportRegisterError(m *Meta, err error) int {
	if match := enforceIndexRe.FindStringSubmatch(err.Error()); len(match) == 2 {
		m.errorf("%s", match[1])
		m.errorf("Job not updated")
		return 1
	}
	m.errorf("Error submitting job: %s", err)
	return 1
}
