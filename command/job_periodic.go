package command

import "github.com/hashicorp/nomad/api"

const jobPeriodicForceHelp = `Usage: drover job periodic force [options] <job>

  This command is used to force the creation of a new instance of a
  periodic job. This is used to immediately run a periodic job, even if it
  violates the job's prohibit_overlap setting.

  Upon successful creation, an interactive monitor session will start to
  display log lines as the child job is scheduled.

Periodic Force Options:

  -detach
    Return immediately instead of entering monitor mode. After the force,
    the evaluation ID will be printed to the screen.

  -verbose
    Display full information.`

// jobPeriodicForce implements `drover job periodic force`.
func jobPeriodicForce(m *Meta, args []string) int {
	fs := m.FlagSet("job periodic force")
	var detach, verbose bool
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	if code, ok := m.parse(fs, args, jobPeriodicForceHelp); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return m.usageError("This command takes one argument: <job>", jobPeriodicForceHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	stub, code := lookupJob(m, c, fs.Arg(0))
	if stub == nil {
		return code
	}
	if !stub.Periodic {
		m.errorf("No periodic job(s) with prefix or ID %q found", fs.Arg(0))
		return 1
	}
	ns := jobStubNamespace(stub)
	evalID, _, err := c.Jobs().PeriodicForce(stub.ID, &api.WriteOptions{Namespace: ns})
	if err != nil {
		m.errorf("Error forcing periodic job %q: %s", stub.ID, err)
		return 1
	}
	if detach {
		m.outf("Force periodic successful")
		m.outf("Evaluation ID: %s", evalID)
		return 0
	}
	return followEval(m, c, ns, evalID, false, verbose)
}
