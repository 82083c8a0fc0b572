package scheduler

import "github.com/drover-project/drover/nomad/structs"

// runnable returns job, or, for a template (a periodic or parameterized
// parent), a stopped copy of it: a template never runs allocations, its
// children do. The reconcilers treat a stopped job as one to place nothing
// for.
func runnable(job *structs.Job) *structs.Job {
	if job == nil || !job.IsTemplate() || job.Stop {
		return job
	}
	c := job.Copy()
	c.Stop = true
	return c
}
