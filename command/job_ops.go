package command

import (
	"bufio"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"
)

const jobRevertHelp = `Usage: drover job revert [options] <job> <version|tag>

  Revert is used to revert a job to a prior version of the job. The
  available versions to revert to can be found using "drover job history".
  The version may also be given as a version tag name.

  Upon successful revert, an interactive monitor session will start to
  display log lines as the job starts its reverted state.

Revert Options:

  -detach
    Return immediately instead of entering monitor mode. After job revert,
    the evaluation ID will be printed to the screen.

  -verbose
    Display full information.`

const jobStopHelp = `Usage: drover job stop [options] <job>
Alias: drover stop

  Stop an existing job. This command is used to signal allocations to shut
  down for the given job ID. Upon successful deregistration, an interactive
  monitor session will start to display log lines as the job unwinds its
  allocations and completes shutting down.

Stop Options:

  -detach
    Return immediately instead of entering monitor mode. After the
    deregister command is submitted, the evaluation ID will be printed.

  -eval-priority
    Override the priority of the evaluations produced as a result of this
    job deregistration.

  -global
    Stop a multi-region job in all its regions.

  -no-shutdown-delay
    Ignore the group and task shutdown_delay configuration.

  -purge
    Purge is used to stop the job and purge it from the system. If not set,
    the job will still be queryable and will be purged by the garbage
    collector.

  -yes
    Automatic yes to prompts.

  -verbose
    Display full information.`

// jobRevert implements `drover job revert`.
func jobRevert(m *Meta, args []string) int {
	fs := m.FlagSet("job revert")
	var detach, verbose bool
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	if code, ok := m.parse(fs, args, jobRevertHelp); !ok {
		return code
	}
	if fs.NArg() != 2 {
		return m.usageError("This command takes two arguments: <job> <version|tag>", jobRevertHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	stub, code := lookupJob(m, c, fs.Arg(0))
	if stub == nil {
		return code
	}
	version, ok := resolveVersion(m, c, stub, fs.Arg(1))
	if !ok {
		return 1
	}
	ns := jobStubNamespace(stub)
	resp, _, err := c.Jobs().Revert(stub.ID, version, nil, &api.WriteOptions{Namespace: ns}, "", "")
	if err != nil {
		m.errorf("Error reverting job: %s", err)
		return 1
	}
	return followEval(m, c, ns, resp.EvalID, detach, verbose)
}

// resolveVersion turns a version number or version tag into a version.
func resolveVersion(m *Meta, c *api.Client, stub *api.JobListStub, arg string) (uint64, bool) {
	if v, err := strconv.ParseUint(arg, 10, 64); err == nil {
		return v, true
	}
	job, _, err := c.Jobs().VersionByTag(stub.ID, arg, jobQuery(stub))
	if err != nil {
		m.errorf("Error retrieving job version %q: %s", arg, err)
		return 0, false
	}
	if job.Version == nil {
		m.errorf("Job version tagged %q has no version number", arg)
		return 0, false
	}
	return *job.Version, true
}

// followEval is the tail of every command that gets an evaluation back:
// nothing to do for an empty ID, print it with -detach, else monitor it.
func followEval(m *Meta, c *api.Client, namespace, evalID string, detach, verbose bool) int {
	if evalID == "" {
		return 0
	}
	if detach {
		m.outf("%s", evalID)
		return 0
	}
	if namespace != "" {
		c.SetNamespace(namespace)
	}
	return newMonitor(m, c, verbose).monitorEval(evalID)
}

// jobStopOptions are the parsed flags of `job stop`.
type jobStopOptions struct {
	detach, purge, yes, verbose, global, noShutdownDelay bool
	evalPriority                                         int
}

// jobStop implements `drover job stop`.
func jobStop(m *Meta, args []string) int {
	var o jobStopOptions
	fs := m.FlagSet("job stop")
	fs.BoolVar(&o.detach, "detach", false, "")
	fs.BoolVar(&o.purge, "purge", false, "")
	fs.BoolVar(&o.yes, "yes", false, "")
	fs.BoolVar(&o.verbose, "verbose", false, "")
	fs.BoolVar(&o.global, "global", false, "")
	fs.BoolVar(&o.noShutdownDelay, "no-shutdown-delay", false, "")
	fs.IntVar(&o.evalPriority, "eval-priority", 0, "")
	if code, ok := m.parse(fs, args, jobStopHelp); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return m.usageError("This command takes one argument: <job>", jobStopHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	stub, code := lookupJob(m, c, fs.Arg(0))
	if stub == nil {
		return code
	}
	if stub.ID != fs.Arg(0) && !o.yes && !confirm(m, "Are you sure you want to stop job \""+stub.ID+"\"? [y/N] ") {
		m.outf("Cancelling job stop")
		return 0
	}
	ns := jobStubNamespace(stub)
	opts := &api.DeregisterOptions{
		Purge: o.purge, Global: o.global, EvalPriority: o.evalPriority, NoShutdownDelay: o.noShutdownDelay,
	}
	evalID, _, err := c.Jobs().DeregisterOpts(stub.ID, opts, &api.WriteOptions{Namespace: ns})
	if err != nil {
		m.errorf("Error deregistering job: %s", err)
		return 1
	}
	return followEval(m, c, ns, evalID, o.detach, o.verbose)
}

// confirm asks a yes/no question on stdin.
func confirm(m *Meta, question string) bool {
	if m.Stdin == nil {
		return false
	}
	_, _ = m.Stdout.Write([]byte(question))
	line, _ := bufio.NewReader(m.Stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

const jobValidateHelp = `Usage: drover job validate [options] <path>
Alias: drover validate

  Checks if a given job specification is valid: it is parsed locally, then
  checked by the server. If the supplied path is "-", the jobfile is read
  from stdin.

Validate Options:

`

// jobValidate implements `drover job validate`.
func jobValidate(m *Meta, args []string) int {
	var file jobFileFlags
	fs := m.FlagSet("job validate")
	file.register(fs)
	help := jobValidateHelp + jobFileFlagsHelp
	if code, ok := m.parse(fs, args, help); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return m.usageError("This command takes one argument: <path>", help)
	}
	job, _, err := file.load(m.Stdin, fs.Arg(0))
	if err != nil {
		m.errorf("Error getting job struct: %s", err)
		return 1
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	forceJobScope(c, job)
	resp, _, err := c.Jobs().Validate(job, nil)
	if err != nil {
		m.errorf("Error validating job: %s", err)
		return 1
	}
	if problems := validationProblems(resp); problems != "" {
		m.errorf("Job validation errors:\n%s", problems)
		return 1
	}
	if w := strings.TrimSpace(resp.Warnings); w != "" {
		m.outf("Job Warnings:\n%s\n", w)
	}
	m.outf("Job validation successful")
	return 0
}

func validationProblems(resp *api.JobValidateResponse) string {
	if len(resp.ValidationErrors) > 0 {
		lines := make([]string, len(resp.ValidationErrors))
		for i, e := range resp.ValidationErrors {
			lines[i] = "* " + e
		}
		return strings.Join(lines, "\n")
	}
	return strings.TrimSpace(resp.Error)
}
