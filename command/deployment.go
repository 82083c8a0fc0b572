package command

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

const deploymentListHelp = `Usage: drover deployment list [options]

  List is used to list the set of deployments tracked by Drover.

List Options:

  -filter
    Specifies an expression used to filter query results.

  -json
    Output the deployments in a JSON format.

  -verbose
    Display full information.`

const deploymentStatusHelp = `Usage: drover deployment status [options] <deployment id>

  Status is used to display the status of a deployment. The status will
  display the number of desired changes as well as the currently applied
  changes. The deployment ID may be given in full or as a prefix.

Status Options:

  -json
    Output the deployment in its JSON format.

  -monitor
    Enter monitor mode to poll for updates to the deployment status until it
    finishes. Exits 0 whatever the outcome.

  -wait
    How long to wait before polling an update, used in conjunction with
    monitor mode. Defaults to 2s.

  -verbose
    Display full information, including the deployment's allocations.`

const deploymentActionHelp = `Usage: drover deployment %s [options] <deployment id>

  %s

%s Options:

  -detach
    Return immediately instead of entering monitor mode. The ID of the
    evaluation created by the action is printed instead.

  -verbose
    Display full information.`

// deploymentList implements `drover deployment list`.
func deploymentList(m *Meta, args []string) int {
	fs := m.FlagSet("deployment list")
	var jsonOut, verbose bool
	var filter string
	fs.BoolVar(&jsonOut, "json", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	fs.StringVar(&filter, "filter", "", "")
	if code, ok := m.parse(fs, args, deploymentListHelp); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return m.usageError("This command takes no arguments", deploymentListHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	deploys, _, err := c.Deployments().List(&api.QueryOptions{Filter: filter})
	if err != nil {
		m.errorf("Error retrieving deployments: %s", err)
		return 1
	}
	if jsonOut {
		return m.printJSON(deploys)
	}
	if len(deploys) == 0 {
		m.outf("No deployments found")
		return 0
	}
	m.outf("%s", formatDeploymentList(deploys, verbose))
	return 0
}

// formatDeploymentList renders the deployment list table.
func formatDeploymentList(deploys []*api.Deployment, verbose bool) string {
	rows := []string{"ID|Job ID|Job Version|Status|Description"}
	for _, d := range deploys {
		rows = append(rows, fmt.Sprintf("%s|%s|%d|%s|%s",
			shortID(d.ID, verbose), d.JobID, d.JobVersion, d.Status, d.StatusDescription))
	}
	return formatList(rows)
}

// lookupDeployment resolves a deployment ID or prefix. Prefixes lose their
// hyphens, as the server matches them against hyphen-less IDs. A nil
// deployment means the command must exit with code.
func lookupDeployment(m *Meta, c *api.Client, arg string, verbose bool) (*api.Deployment, int) {
	if len(arg) == 36 {
		d, _, err := c.Deployments().Info(arg, nil)
		if err != nil {
			m.errorf("Error retrieving deployment: %s", err)
			return nil, 1
		}
		return d, 0
	}
	prefix := deploymentPrefix(arg)
	if len(prefix) < 2 {
		m.errorf("Identifier must contain at least two characters.")
		return nil, 1
	}
	deploys, _, err := c.Deployments().PrefixList(prefix)
	if err != nil {
		m.errorf("Error retrieving deployment: %s", err)
		return nil, 1
	}
	switch len(deploys) {
	case 0:
		m.errorf("No deployment(s) with prefix or id %q found", arg)
		return nil, 1
	case 1:
		return deploys[0], 0
	}
	m.errorf("Prefix matched multiple deployments\n\n%s", formatDeploymentList(deploys, verbose))
	return nil, 1
}

// deploymentPrefix drops hyphens and trims to an even length.
func deploymentPrefix(arg string) string {
	p := strings.ReplaceAll(arg, "-", "")
	if len(p)%2 == 1 {
		p = p[:len(p)-1]
	}
	return p
}

// deploymentStatus implements `drover deployment status`.
func deploymentStatus(m *Meta, args []string) int {
	fs := m.FlagSet("deployment status")
	var jsonOut, verbose, monitorMode bool
	var wait time.Duration
	fs.BoolVar(&jsonOut, "json", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	fs.BoolVar(&monitorMode, "monitor", false, "")
	fs.DurationVar(&wait, "wait", 2*time.Second, "")
	if code, ok := m.parse(fs, args, deploymentStatusHelp); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return m.usageError("This command takes one argument: <deployment id>", deploymentStatusHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	d, code := lookupDeployment(m, c, fs.Arg(0), verbose)
	if d == nil {
		return code
	}
	if jsonOut {
		return m.printJSON(d)
	}
	if monitorMode {
		// Like Nomad, the outcome of the deployment does not set the exit
		// code; only failing to follow it does.
		if _, err := newMonitor(m, c, verbose).monitorDeployment(d.ID, 0, wait); err != nil {
			return 1
		}
		return 0
	}
	mon := newMonitor(m, c, verbose)
	out := formatDeployment(d, verbose) + mon.canariesSection(d) + mon.gatesSection(d)
	if verbose {
		out += mon.deploymentAllocsSection(d.ID)
	}
	m.outf("%s", out)
	return 0
}

// deploymentAction holds the flags shared by promote, fail, pause and
// resume.
type deploymentAction struct {
	detach, verbose bool
	groups          stringSlice
}

// parse parses the flags and resolves the deployment; a nil deployment
// means the command must return code.
func (a *deploymentAction) parse(m *Meta, name, synopsis string, args []string, withGroups bool) (*api.Client, *api.Deployment, int) {
	fs := m.FlagSet("deployment " + name)
	fs.BoolVar(&a.detach, "detach", false, "")
	fs.BoolVar(&a.verbose, "verbose", false, "")
	help := fmt.Sprintf(deploymentActionHelp, name, synopsis, strings.ToUpper(name[:1])+name[1:])
	if withGroups {
		fs.Var(&a.groups, "group", "")
		help += "\n\n  -group\n    Promote only this task group; may be given several times. Without it,\n    all task groups are promoted."
	}
	if code, ok := m.parse(fs, args, help); !ok {
		return nil, nil, code
	}
	if fs.NArg() != 1 {
		return nil, nil, m.usageError("This command takes one argument: <deployment id>", help)
	}
	c, ok := m.mustClient()
	if !ok {
		return nil, nil, 1
	}
	d, code := lookupDeployment(m, c, fs.Arg(0), a.verbose)
	return c, d, code
}

// deploymentPromote implements `drover deployment promote`.
func deploymentPromote(m *Meta, args []string) int {
	var a deploymentAction
	c, d, code := a.parse(m, "promote", "Promote is used to promote task groups in a deployment.", args, true)
	if d == nil {
		return code
	}
	var resp *api.DeploymentUpdateResponse
	var err error
	if len(a.groups) == 0 {
		resp, _, err = c.Deployments().PromoteAll(d.ID, nil)
	} else {
		resp, _, err = c.Deployments().PromoteGroups(d.ID, a.groups, nil)
	}
	if err != nil {
		m.errorf("Error promoting deployment: %s", err)
		return 1
	}
	return followEval(m, c, d.Namespace, resp.EvalID, a.detach, a.verbose)
}

// deploymentFail implements `drover deployment fail`.
func deploymentFail(m *Meta, args []string) int {
	var a deploymentAction
	c, d, code := a.parse(m, "fail", "Fail is used to mark a deployment as failed.", args, false)
	if d == nil {
		return code
	}
	resp, _, err := c.Deployments().Fail(d.ID, nil)
	if err != nil {
		m.errorf("Error failing deployment: %s", err)
		return 1
	}
	m.outf("Deployment %q failed", d.ID)
	if resp.RevertedJobVersion != nil {
		m.outf("Auto-reverted to job version %d", *resp.RevertedJobVersion)
	}
	return followEval(m, c, d.Namespace, resp.EvalID, a.detach, a.verbose)
}

// deploymentPause implements `drover deployment pause`.
func deploymentPause(m *Meta, args []string) int {
	var a deploymentAction
	c, d, code := a.parse(m, "pause", "Pause is used to pause a deployment.", args, false)
	if d == nil {
		return code
	}
	if _, _, err := c.Deployments().Pause(d.ID, true, nil); err != nil {
		m.errorf("Error pausing deployment: %s", err)
		return 1
	}
	m.outf("Deployment %q paused", d.ID)
	return 0
}

// deploymentResume implements `drover deployment resume`.
func deploymentResume(m *Meta, args []string) int {
	var a deploymentAction
	c, d, code := a.parse(m, "resume", "Resume is used to unpause a paused deployment.", args, false)
	if d == nil {
		return code
	}
	resp, _, err := c.Deployments().Pause(d.ID, false, nil)
	if err != nil {
		m.errorf("Error resuming deployment: %s", err)
		return 1
	}
	m.outf("Deployment %q resumed", d.ID)
	return followEval(m, c, d.Namespace, resp.EvalID, a.detach, a.verbose)
}
