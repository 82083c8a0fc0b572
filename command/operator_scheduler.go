package command

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"
)

const schedulerGetConfigHelp = `Usage: drover operator scheduler get-config [options]

  Displays the cluster's scheduler configuration.

Options:

  -json  Output the configuration as JSON.
`

const schedulerSetConfigHelp = `Usage: drover operator scheduler set-config [options]

  Changes the cluster's scheduler configuration. Only the options given
  change; the others keep their current values.

Options:

  -scheduler-algorithm=<binpack|spread>
  -memory-oversubscription=<true|false>
  -reject-job-registration=<true|false>
  -pause-eval-broker=<true|false>
  -preempt-system-scheduler=<true|false>
  -preempt-sysbatch-scheduler=<true|false>
  -preempt-batch-scheduler=<true|false>
  -preempt-service-scheduler=<true|false>
  -check-index=<index>  Only change the configuration if its modify index is
                        still <index> (check-and-set).
`

// schedulerGetConfig implements `drover operator scheduler get-config`.
func schedulerGetConfig(m *Meta, args []string) int {
	fs := m.FlagSet("operator scheduler get-config")
	var jsonOut bool
	fs.BoolVar(&jsonOut, "json", false, "")
	if code, ok := m.parse(fs, args, schedulerGetConfigHelp); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return m.usageError("This command takes no arguments", schedulerGetConfigHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	resp, _, err := c.Operator().SchedulerGetConfiguration(nil)
	if err != nil {
		m.errorf("error: %s", err)
		return 1
	}
	if jsonOut {
		return m.printJSON(resp.SchedulerConfig)
	}
	m.outf("%s", renderSchedulerConfig(resp.SchedulerConfig))
	return 0
}

func renderSchedulerConfig(c *api.SchedulerConfiguration) string {
	var b strings.Builder
	row := func(k string, v any) { fmt.Fprintf(&b, "%-32s = %v\n", k, v) }
	row("Scheduler Algorithm", c.SchedulerAlgorithm)
	row("Memory Oversubscription", c.MemoryOversubscriptionEnabled)
	row("Reject Job Registration", c.RejectJobRegistration)
	row("Pause Eval Broker", c.PauseEvalBroker)
	row("Node Limit For Feasibility Checks", c.NodeLimitForFeasibilityChecks)
	row("Modify Index", c.ModifyIndex)
	b.WriteString("\nPreemption Config\n")
	row("System Scheduler Enabled", c.PreemptionConfig.SystemSchedulerEnabled)
	row("SysBatch Scheduler Enabled", c.PreemptionConfig.SysBatchSchedulerEnabled)
	row("Batch Scheduler Enabled", c.PreemptionConfig.BatchSchedulerEnabled)
	row("Service Scheduler Enabled", c.PreemptionConfig.ServiceSchedulerEnabled)
	return b.String()
}

// optBool is a true|false flag that records whether it was given.
type optBool struct {
	set, val bool
}

func (o *optBool) String() string { return strconv.FormatBool(o.val) }
func (o *optBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false, got %q", s)
	}
	o.set, o.val = true, v
	return nil
}

// schedulerSetConfig implements `drover operator scheduler set-config`.
func schedulerSetConfig(m *Meta, args []string) int {
	fs := m.FlagSet("operator scheduler set-config")
	var algorithm, checkIndex string
	var oversub, reject, pause, pSystem, pSysBatch, pBatch, pService optBool
	fs.StringVar(&algorithm, "scheduler-algorithm", "", "")
	fs.StringVar(&checkIndex, "check-index", "", "")
	for name, v := range map[string]*optBool{
		"memory-oversubscription": &oversub, "reject-job-registration": &reject,
		"pause-eval-broker": &pause, "preempt-system-scheduler": &pSystem,
		"preempt-sysbatch-scheduler": &pSysBatch, "preempt-batch-scheduler": &pBatch,
		"preempt-service-scheduler": &pService,
	} {
		fs.Var(v, name, "")
	}
	if code, ok := m.parse(fs, args, schedulerSetConfigHelp); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return m.usageError("This command takes no arguments", schedulerSetConfigHelp)
	}
	if algorithm != "" && algorithm != string(api.SchedulerAlgorithmBinpack) && algorithm != string(api.SchedulerAlgorithmSpread) {
		return m.usageError(fmt.Sprintf("-scheduler-algorithm must be binpack or spread, got %q", algorithm), schedulerSetConfigHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	cur, _, err := c.Operator().SchedulerGetConfiguration(nil)
	if err != nil {
		m.errorf("error: %s", err)
		return 1
	}
	cfg := cur.SchedulerConfig
	if algorithm != "" {
		cfg.SchedulerAlgorithm = api.SchedulerAlgorithm(algorithm)
	}
	for _, o := range []struct {
		v   *optBool
		dst *bool
	}{
		{&oversub, &cfg.MemoryOversubscriptionEnabled}, {&reject, &cfg.RejectJobRegistration},
		{&pause, &cfg.PauseEvalBroker}, {&pSystem, &cfg.PreemptionConfig.SystemSchedulerEnabled},
		{&pSysBatch, &cfg.PreemptionConfig.SysBatchSchedulerEnabled},
		{&pBatch, &cfg.PreemptionConfig.BatchSchedulerEnabled},
		{&pService, &cfg.PreemptionConfig.ServiceSchedulerEnabled},
	} {
		if o.v.set {
			*o.dst = o.v.val
		}
	}
	var resp *api.SchedulerSetConfigurationResponse
	if checkIndex != "" {
		idx, err := strconv.ParseUint(checkIndex, 10, 64)
		if err != nil {
			return m.usageError(fmt.Sprintf("-check-index must be an index, got %q", checkIndex), schedulerSetConfigHelp)
		}
		cfg.ModifyIndex = idx
		resp, _, err = c.Operator().SchedulerCASConfiguration(cfg, nil)
		if err != nil {
			m.errorf("error: %s", err)
			return 1
		}
	} else {
		resp, _, err = c.Operator().SchedulerSetConfiguration(cfg, nil)
		if err != nil {
			m.errorf("error: %s", err)
			return 1
		}
	}
	if !resp.Updated {
		m.errorf("Scheduler configuration not updated: its modify index is no longer %s", checkIndex)
		return 1
	}
	m.outf("Scheduler configuration updated!\n")
	return 0
}

var _ flag.Value = (*optBool)(nil)
