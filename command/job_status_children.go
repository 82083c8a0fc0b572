package command

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// childJobs lists the children of parent (periodic launches or dispatches),
// by ID.
func childJobs(c *api.Client, parent *api.Job, q *api.QueryOptions) ([]*api.JobListStub, error) {
	prefix := deref(parent.ID) + "/"
	opts := *q
	opts.Prefix = prefix
	jobs, _, err := c.Jobs().List(&opts)
	if err != nil {
		return nil, err
	}
	out := jobs[:0]
	for _, j := range jobs {
		if j.ParentID == deref(parent.ID) {
			out = append(out, j)
		}
	}
	return out, nil
}

// nextPeriodicLaunch renders the next launch of an enabled periodic job
// after now, in the job's time zone, with the time until it.
func nextPeriodicLaunch(j *api.Job, now time.Time) string {
	p := j.Periodic
	if p == nil || (p.Enabled != nil && !*p.Enabled) || (j.Stop != nil && *j.Stop) {
		return "none"
	}
	loc, err := p.GetLocation()
	if err != nil {
		return "unknown: " + err.Error()
	}
	cfg := *p
	if cfg.SpecType == nil {
		cfg.SpecType = new(api.PeriodicSpecCron)
	}
	next, err := cfg.Next(now.In(loc))
	if err != nil {
		return "unknown: " + err.Error()
	}
	if next.IsZero() {
		return "none"
	}
	return fmt.Sprintf("%s (%s from now)", next.Format("2006-01-02T15:04:05Z07:00"), next.Sub(now).Round(time.Second))
}

// formatChildren renders the children summary and list of a periodic or
// parameterized parent, as Nomad's CLI does.
func formatChildren(j *api.Job, children []*api.JobListStub) string {
	var pending, running, dead int
	rows := []string{"ID|Status"}
	for _, c := range children {
		switch c.Status {
		case "pending":
			pending++
		case "running":
			running++
		default:
			dead++
		}
		rows = append(rows, c.ID+"|"+jobStatusLabel(c.Status, c.Stop))
	}
	title, list := "Children Job Summary", "Previously Launched Jobs"
	if j.IsParameterized() {
		title, list = "Parameterized Job Summary", "Dispatched Jobs"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s", title, formatList([]string{"Pending|Running|Dead", fmt.Sprintf("%d|%d|%d", pending, running, dead)}))
	if len(children) == 0 {
		fmt.Fprintf(&b, "\n\nNo instances of %s job found", map[bool]string{true: "parameterized", false: "periodic"}[j.IsParameterized()])
		return b.String()
	}
	fmt.Fprintf(&b, "\n\n%s\n%s", list, formatList(rows))
	return b.String()
}

// formatParameterized renders a parameterized job's block.
func formatParameterized(p *api.ParameterizedJobConfig) string {
	payload := p.Payload
	if payload == "" {
		payload = "optional"
	}
	return "Parameterized Job\n" + formatKV([]string{
		"Payload|" + payload,
		"Required Metadata|" + strings.Join(p.MetaRequired, ", "),
		"Optional Metadata|" + strings.Join(p.MetaOptional, ", "),
	})
}
