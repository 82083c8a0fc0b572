package nomad

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/drover-project/drover/drivers"
	_ "github.com/drover-project/drover/drivers/builtin" // the drivers whose task config schemas ValidateJob checks
	"github.com/drover-project/drover/nomad/structs"
)

// ValidateJob checks a submitted job as registration, plan and dispatch
// do: the job's own rules (structs.Job.Validate) and then each task's
// driver config against its driver's schema, with the code the client runs
// before it starts the task (drivers.ValidateSubmitted). The error is a
// *structs.ValidationError listing every problem (an HTTP 400).
// driverConfigValidated is true when every task's driver is one Drover has,
// so its config was checked; a driver Drover lacks is not refused (its
// placement reports "missing drivers").
func ValidateJob(job *structs.Job) (driverConfigValidated bool, err error) {
	var problems []string
	if err := job.Validate(); err != nil {
		var verr *structs.ValidationError
		if !errors.As(err, &verr) {
			return false, err
		}
		problems = append(problems, verr.Problems...)
	}
	driverConfigValidated = true
	for _, tg := range job.TaskGroups {
		if tg == nil {
			continue
		}
		for _, t := range tg.Tasks {
			if t == nil || t.Driver == "" {
				continue
			}
			known, err := drivers.ValidateSubmitted(t.Driver, t.Config)
			driverConfigValidated = driverConfigValidated && known
			if err == nil && t.Resources != nil {
				err = drivers.ValidateSubmittedResources(t.Driver, t.Config, t.Resources.MemoryMB, t.Resources.MemoryMaxMB)
			}
			for _, e := range leafErrors(err) {
				problems = append(problems, fmt.Sprintf("Task group %q validation failed: task %q: config: %v", tg.Name, t.Name, e))
			}
			for _, label := range unknownPortLabels(tg, t) {
				problems = append(problems, fmt.Sprintf("Task group %q validation failed: task %q: config: ports names port %q, which is not a port of the group's network block", tg.Name, t.Name, label))
			}
		}
	}
	if len(problems) > 0 {
		return driverConfigValidated, &structs.ValidationError{Problems: problems}
	}
	return driverConfigValidated, nil
}

// leafErrors unwraps an errors.Join tree into its leaves (nil: none).
func leafErrors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leafErrors(e)...)
		}
		return out
	}
	return []error{err}
}

// validateSubmitted is ValidateJob for the server's write paths: a refusal
// is an HTTP 400 carrying every problem.
func validateSubmitted(job *structs.Job) error {
	if _, err := ValidateJob(job); err != nil {
		return &structs.RequestError{Kind: structs.ErrBadRequest, Msg: err.Error()}
	}
	return nil
}

// unknownPortLabels are the labels of a Docker task's ports that no
// network of its group (or the task's own, legacy) defines: the task could
// never start (the client refuses it), so the job is refused instead. A
// label holding an interpolation is the node's to resolve.
func unknownPortLabels(tg *structs.TaskGroup, t *structs.Task) []string {
	if t.Driver != "docker" {
		return nil
	}
	labels, _, err := drivers.ConfigStringSlice(t.Config, "ports")
	if err != nil || len(labels) == 0 {
		return nil
	}
	known := map[string]bool{}
	networks := slices.Clone(tg.Networks)
	if t.Resources != nil {
		networks = append(networks, t.Resources.Networks...)
	}
	for _, n := range networks {
		if n == nil {
			continue
		}
		for _, p := range slices.Concat(n.ReservedPorts, n.DynamicPorts) {
			known[p.Label] = true
		}
	}
	var unknown []string
	for _, l := range labels {
		if !known[l] && !strings.Contains(l, "${") {
			unknown = append(unknown, l)
		}
	}
	return unknown
}
