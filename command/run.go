package command

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/drover-project/drover/command/agent"
)

// command is one node of the CLI tree: a leaf runs, an inner node has subs.
type command struct {
	name     string
	synopsis string
	run      func(m *Meta, args []string) int
	subs     []*command
}

// commands returns the CLI tree.
func commands() []*command {
	return []*command{
		{name: "agent", synopsis: "Runs a Drover agent", run: runAgent},
		aclCommands(),
		{name: "alloc", synopsis: "Interact with allocations", subs: []*command{
			{name: "exec", synopsis: "Execute commands in task", run: allocExec},
			{name: "logs", synopsis: "Streams the logs of a task", run: allocLogs},
			{name: "status", synopsis: "Display allocation status information and metadata", run: allocStatus},
		}},
		{name: "deployment", synopsis: "Interact with deployments", subs: []*command{
			{name: "fail", synopsis: "Manually fail a deployment", run: deploymentFail},
			{name: "list", synopsis: "List all deployments", run: deploymentList},
			{name: "pause", synopsis: "Pause a deployment", run: deploymentPause},
			{name: "promote", synopsis: "Promote canaries in a deployment", run: deploymentPromote},
			{name: "resume", synopsis: "Resume a paused deployment", run: deploymentResume},
			{name: "status", synopsis: "Display the status of a deployment", run: deploymentStatus},
		}},
		{name: "eval", synopsis: "Interact with evaluations", subs: []*command{
			{name: "status", synopsis: "Display evaluation status and placement failure reasons", run: evalStatus},
		}},
		{name: "job", synopsis: "Interact with jobs", subs: []*command{
			{name: "dispatch", synopsis: "Dispatch an instance of a parameterized job", run: jobDispatch},
			{name: "history", synopsis: "Display all tracked versions of a job", run: jobHistory},
			{name: "image-updates", synopsis: "Show and trigger image auto-updates of a job", run: jobImageUpdates},
			{name: "inspect", synopsis: "Inspect a submitted job", run: jobInspect},
			{name: "periodic", synopsis: "Interact with periodic jobs", subs: []*command{
				{name: "force", synopsis: "Force the launch of a periodic job", run: jobPeriodicForce},
			}},
			{name: "plan", synopsis: "Dry-run a job update to determine its effects", run: jobPlan},
			{name: "revert", synopsis: "Revert to a prior version of the job", run: jobRevert},
			{name: "run", synopsis: "Run a new job or update an existing job", run: jobRun},
			{name: "scale", synopsis: "Change the count of a job group", run: jobScale},
			{name: "scaling-events", synopsis: "Display the most recent scaling events for a job", run: jobScalingEvents},
			{name: "status", synopsis: "Display status information about a job", run: jobStatus},
			{name: "stop", synopsis: "Stop a running job", run: jobStop},
			{name: "validate", synopsis: "Checks if a given job specification is valid", run: jobValidate},
		}},
		namespaceCommands(),
		{name: "node", synopsis: "Interact with nodes", subs: []*command{
			{name: "drain", synopsis: "Toggle drain mode on a given node", run: nodeDrain},
			{name: "eligibility", synopsis: "Toggle scheduling eligibility for a given node", run: nodeEligibility},
			{name: "intro", synopsis: "Manage client introduction tokens", subs: []*command{
				{name: "create", synopsis: "Generate a new client introduction token", run: nodeIntroCreate},
			}},
			{name: "status", synopsis: "Display status information about nodes", run: nodeStatus},
		}},
		{name: "operator", synopsis: "Provides cluster-level tools for Drover operators", subs: []*command{
			{name: "keyring", synopsis: "Manages the cluster's signing keys", subs: []*command{
				{name: "list", synopsis: "Lists the signing keys", run: keyringList},
				{name: "remove", synopsis: "Removes an inactive signing key", run: keyringRemove},
				{name: "rotate", synopsis: "Generates a new active signing key", run: keyringRotate},
			}},
			{name: "snapshot", synopsis: "Saves and restores the cluster's state", subs: []*command{
				{name: "restore", synopsis: "Restores the cluster's state from an archive", run: snapshotRestore},
				{name: "save", synopsis: "Saves the cluster's state to an archive", run: snapshotSave},
			}},
			{name: "scheduler", synopsis: "Views and changes the scheduler configuration", subs: []*command{
				{name: "get-config", synopsis: "Displays the scheduler configuration", run: schedulerGetConfig},
				{name: "set-config", synopsis: "Changes the scheduler configuration", run: schedulerSetConfig},
			}},
		}},
		{name: "nodesim", synopsis: "Runs simulated client nodes (mock driver) against the servers", run: runNodesim},
		{name: "system", synopsis: "Interact with the system API", subs: []*command{
			{name: "gc", synopsis: "Run the system garbage collection process", run: systemGC},
		}},
		{name: "tls", synopsis: "Generate a self-signed CA and certificates for TLS", subs: []*command{
			{name: "ca", synopsis: "Manage the certificate authority", subs: []*command{
				{name: "create", synopsis: "Create a certificate authority", run: tlsCACreate},
			}},
			{name: "cert", synopsis: "Manage certificates", subs: []*command{
				{name: "create", synopsis: "Create a certificate signed by the CA", run: tlsCertCreate},
			}},
		}},
		serviceCommands(),
		varCommands(),
		{name: "version", synopsis: "Prints the Drover version", run: runVersion},
		{name: "volume", synopsis: "Interact with volumes", subs: []*command{
			{name: "create", synopsis: "Create an external volume", run: volumeCreate},
			{name: "delete", synopsis: "Delete a volume", run: volumeDelete},
			{name: "register", synopsis: "Register an existing volume", run: volumeRegister},
			{name: "status", synopsis: "Display status information about a volume", run: volumeStatus},
		}},
		// Shortcuts Nomad users know.
		{name: "inspect", synopsis: "Alias for job inspect", run: jobInspect},
		{name: "plan", synopsis: "Alias for job plan", run: jobPlan},
		{name: "run", synopsis: "Alias for job run", run: jobRun},
		{name: "stop", synopsis: "Alias for job stop", run: jobStop},
		{name: "validate", synopsis: "Alias for job validate", run: jobValidate},
	}
}

// Run dispatches the CLI and returns the exit code.
func Run(args []string) int {
	return run(args, os.Stdout, os.Stderr)
}

// run is Run with injectable output streams.
func run(args []string, stdout, stderr io.Writer) int {
	return runIO(args, os.Stdin, stdout, stderr)
}

// runIO is run with an injectable stdin too.
func runIO(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	m := &Meta{Stdin: stdin, Stdout: stdout, Stderr: stderr}
	if len(args) > 0 {
		switch args[0] {
		case "-v", "-version", "--version":
			return runVersion(m, nil)
		}
	}
	return dispatch(m, "drover", commands(), args)
}

// dispatch finds the command named by args[0] among cmds and runs it.
func dispatch(m *Meta, path string, cmds []*command, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(m.Stderr, usage(path, cmds))
		return 1
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(m.Stdout, usage(path, cmds))
		return 0
	}
	for _, c := range cmds {
		if c.name != args[0] {
			continue
		}
		if c.run != nil {
			return c.run(m, args[1:])
		}
		return dispatch(m, path+" "+c.name, c.subs, args[1:])
	}
	m.errorf("Unknown command: %s %s\n", path, args[0])
	fmt.Fprintln(m.Stderr, usage(path, cmds))
	return 1
}

// usage lists the commands available under path.
func usage(path string, cmds []*command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s <command> [args]\n\n", path)
	if path == "drover" {
		b.WriteString("Drover runs system, sysbatch, service and batch jobs and speaks the Nomad HTTP API.\n\n")
	}
	b.WriteString("Available commands are:\n")
	width := 0
	for _, c := range cmds {
		width = max(width, len(c.name))
	}
	for _, c := range cmds {
		fmt.Fprintf(&b, "    %-*s    %s\n", width, c.name, c.synopsis)
	}
	return strings.TrimRight(b.String(), "\n")
}

// runAgent hands over to the agent package.
func runAgent(m *Meta, args []string) int {
	return agent.Command(args, m.Stdout, m.Stderr)
}
