package command

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/nomad/api"
)

const nodeEligibilityHelp = `Usage: drover node eligibility [options] <node>

  Toggle the scheduling eligibility of a node. An ineligible node keeps its
  allocations but receives no new placements.

Node Eligibility Options:

  -enable
    Enable scheduling eligibility.

  -disable
    Disable scheduling eligibility.

  -self
    Set the eligibility of the local node.`

// nodeEligibility implements `drover node eligibility`.
func nodeEligibility(m *Meta, args []string) int {
	var enable, disable, self bool
	fs := m.FlagSet("node eligibility")
	fs.BoolVar(&enable, "enable", false, "")
	fs.BoolVar(&disable, "disable", false, "")
	fs.BoolVar(&self, "self", false, "")
	if code, ok := m.parse(fs, args, nodeEligibilityHelp); !ok {
		return code
	}
	if enable == disable {
		return m.usageError("Either the '-enable' or '-disable' flag must be set", nodeEligibilityHelp)
	}
	c, id, code := resolveNodeArg(m, fs.Args(), self, nodeEligibilityHelp)
	if id == "" {
		return code
	}
	if _, err := c.Nodes().ToggleEligibility(id, enable, nil); err != nil {
		m.errorf("Error updating scheduling eligibility: %s", err)
		return 1
	}
	if enable {
		m.outf("Node %q scheduling eligibility set: eligible for scheduling", id)
	} else {
		m.outf("Node %q scheduling eligibility set: ineligible for scheduling", id)
	}
	return 0
}

// resolveNodeArg returns the node named by args (or the local node with
// self); an empty id means the command must exit with code.
func resolveNodeArg(m *Meta, args []string, self bool, help string) (*api.Client, string, int) {
	if (self && len(args) != 0) || (!self && len(args) != 1) {
		return nil, "", m.usageError("This command takes one argument: <node>", help)
	}
	c, ok := m.mustClient()
	if !ok {
		return nil, "", 1
	}
	if self {
		id, err := localNodeID(c)
		if err != nil {
			m.errorf("Error determining local node ID: %s", err)
			return nil, "", 1
		}
		return c, id, 0
	}
	id, code := lookupNode(m, c, args[0], false)
	return c, id, code
}

const nodeDrainHelp = `Usage: drover node drain [options] <node>

  Toggle node draining. A draining node receives no new placements. Its
  service allocations migrate per their migrate block, batch allocations run
  on until the deadline, and system allocations stop last, once the others
  are gone. At the deadline every allocation left is stopped. When none is
  left the drain is complete and the node stays ineligible.

Node Drain Options:

  -enable
    Enable draining for the specified node.

  -disable
    Disable draining for the specified node.

  -detach
    Return immediately instead of monitoring the drain.

  -keep-ineligible
    With -disable, keep the node ineligible for scheduling.

  -deadline <duration>
    How long the drain may take before every allocation left is stopped.
    Defaults to 1h.

  -no-deadline
    No deadline: batch allocations run until they finish.

  -force
    Stop every allocation at once (the deadline is now).

  -ignore-system
    Leave system and sysbatch allocations running.

  -self
    Drain the local node.

  -yes
    Automatic yes to prompts.`

// nodeDrainOptions are the parsed flags of `node drain`.
type nodeDrainOptions struct {
	enable, disable, detach, keepIneligible, self, yes bool
}

// nodeDrain implements `drover node drain`.
func nodeDrain(m *Meta, args []string) int {
	var o nodeDrainOptions
	fs := m.FlagSet("node drain")
	fs.BoolVar(&o.enable, "enable", false, "")
	fs.BoolVar(&o.disable, "disable", false, "")
	fs.BoolVar(&o.detach, "detach", false, "")
	fs.BoolVar(&o.keepIneligible, "keep-ineligible", false, "")
	fs.BoolVar(&o.self, "self", false, "")
	fs.BoolVar(&o.yes, "yes", false, "")
	var deadline string
	var ignoreSystem, noDeadline, force, monitor bool
	fs.StringVar(&deadline, "deadline", "", "")
	fs.BoolVar(&ignoreSystem, "ignore-system", false, "")
	fs.BoolVar(&noDeadline, "no-deadline", false, "")
	fs.BoolVar(&force, "force", false, "")
	fs.BoolVar(&monitor, "monitor", false, "")
	if code, ok := m.parse(fs, args, nodeDrainHelp); !ok {
		return code
	}
	if o.enable == o.disable {
		return m.usageError("Either the '-enable' or '-disable' flag must be set", nodeDrainHelp)
	}
	c, id, code := resolveNodeArg(m, fs.Args(), o.self, nodeDrainHelp)
	if id == "" {
		return code
	}
	if o.enable && !o.yes && !confirm(m, "Are you sure you want to enable drain mode for node \""+id+"\"? [y/N] ") {
		m.outf("Canceling drain")
		return 1
	}
	var spec *api.DrainSpec
	if o.enable {
		d, msg := drainDeadline(deadline, noDeadline, force)
		if msg != "" {
			return m.usageError(msg, nodeDrainHelp)
		}
		spec = &api.DrainSpec{Deadline: d, IgnoreSystemJobs: ignoreSystem}
	}
	resp, err := c.Nodes().UpdateDrain(id, spec, o.disable && !o.keepIneligible, nil)
	if err != nil {
		m.errorf("Error updating drain specification: %s", err)
		return 1
	}
	if o.disable {
		m.outf("Node %q drain strategy unset", id)
		return 0
	}
	m.outf("Node %q drain strategy set", id)
	if o.detach {
		return 0
	}
	return monitorDrain(m, c, id, resp.NodeModifyIndex, ignoreSystem)
}

// drainDeadline turns the deadline flags of `node drain -enable` into a
// DrainSpec deadline: one hour by default, 0 with -no-deadline, negative
// with -force (the deadline is now). msg names a bad combination.
func drainDeadline(deadline string, noDeadline, force bool) (d time.Duration, msg string) {
	set := 0
	for _, b := range []bool{deadline != "", noDeadline, force} {
		if b {
			set++
		}
	}
	switch {
	case set > 1:
		return 0, "only one of -deadline, -no-deadline and -force may be given"
	case force:
		return -time.Second, ""
	case noDeadline:
		return 0, ""
	case deadline == "":
		return time.Hour, ""
	}
	d, err := time.ParseDuration(deadline)
	if err != nil || d <= 0 {
		return 0, fmt.Sprintf("-deadline must be a positive duration, got %q", deadline)
	}
	return d, ""
}

// monitorDrain follows a node until its drain completes, printing what
// changes on the way: its allocations' client statuses, drain updates, and
// the end ("All allocations on node ... have stopped", "Drain complete for
// node ...").
func monitorDrain(m *Meta, c *api.Client, id string, index uint64, ignoreSystem bool) int {
	m.outf("==> %s: Monitoring node %q: Ctrl-C to detach monitoring", formatTime(time.Now()), id)
	code := 0
	for msg := range c.Nodes().MonitorDrain(context.Background(), id, index, ignoreSystem) {
		switch msg.Level {
		case api.MonitorMsgLevelError:
			m.errorf("%s: %s", formatTime(time.Now()), msg)
			code = 1
		case api.MonitorMsgLevelNormal:
			m.outf("    %s: %s", formatTime(time.Now()), msg)
		default:
			m.outf("==> %s: %s", formatTime(time.Now()), msg)
		}
	}
	return code
}
