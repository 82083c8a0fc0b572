package state

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// jobByID returns the current version of job (ns, id), or nil.
func jobByID(txn *memdb.Txn, ws memdb.WatchSet, ns, id string) (*structs.Job, error) {
	raw, err := first(txn, ws, TableJobs, indexID, nsOrDefault(ns), id)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.Job), nil
}

// JobByID returns the current version of job (ns, id), or nil.
func (r reader) JobByID(ws memdb.WatchSet, ns, id string) (*structs.Job, error) {
	return jobByID(r.txn(), ws, ns, id)
}

// Jobs returns the jobs of namespace ns ("*": all), sorted by namespace and ID.
func (r reader) Jobs(ws memdb.WatchSet, ns string) ([]*structs.Job, error) {
	if ns == allNamespaces {
		return list[*structs.Job](r.txn(), ws, TableJobs, indexID)
	}
	return list[*structs.Job](r.txn(), ws, TableJobs, indexIDPrefix, nsOrDefault(ns), "")
}

// JobsByIDPrefix returns the jobs of namespace ns ("*": all) whose ID starts
// with prefix, sorted by namespace and ID.
func (r reader) JobsByIDPrefix(ws memdb.WatchSet, ns, prefix string) ([]*structs.Job, error) {
	if ns != allNamespaces {
		return list[*structs.Job](r.txn(), ws, TableJobs, indexIDPrefix, nsOrDefault(ns), prefix)
	}
	all, err := list[*structs.Job](r.txn(), ws, TableJobs, indexID)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, j := range all {
		if strings.HasPrefix(j.ID, prefix) {
			out = append(out, j)
		}
	}
	return out, nil
}

// JobSummaryByID counts the allocations of the current incarnation of job
// (ns, id) (and those whose job is unknown) per task group by client
// status, from the job's counts. Every group of the job is present, with
// zero counts if it has no allocation. It returns nil when the job does
// not exist.
func (r reader) JobSummaryByID(ws memdb.WatchSet, ns, id string) (*structs.JobSummary, error) {
	txn := r.txn()
	job, err := jobByID(txn, ws, ns, id)
	if job == nil || err != nil {
		return nil, err
	}
	counts, err := jobCountsByID(txn, ws, job.Namespace, id)
	if err != nil {
		return nil, err
	}
	return jobSummaryOf(job, counts), nil
}

// jobSummaryOf builds the summary of job's current incarnation from its
// counts (nil: no allocations). Groups an older version had are left out.
func jobSummaryOf(job *structs.Job, counts *jobCounts) *structs.JobSummary {
	sum := &structs.JobSummary{
		JobID:       job.ID,
		Namespace:   job.Namespace,
		Summary:     make(map[string]structs.TaskGroupSummary, len(job.TaskGroups)),
		CreateIndex: job.CreateIndex,
		ModifyIndex: job.ModifyIndex,
	}
	for _, tg := range job.TaskGroups {
		sum.Summary[tg.Name] = structs.TaskGroupSummary{}
	}
	if counts == nil {
		return sum
	}
	keys := []uint64{job.CreateIndex}
	if job.CreateIndex != 0 {
		keys = append(keys, 0) // allocations whose job is unknown
	}
	for _, k := range keys {
		inc := counts.Incarnations[k]
		if inc == nil {
			continue
		}
		for name, c := range inc.Groups {
			tg, ok := sum.Summary[name]
			if !ok {
				continue
			}
			tg.Starting += c.Starting
			tg.Running += c.Running
			tg.Complete += c.Complete
			tg.Failed += c.Failed
			tg.Lost += c.Lost
			tg.Unknown += c.Unknown
			sum.Summary[name] = tg
		}
		sum.ModifyIndex = max(sum.ModifyIndex, inc.ModifyIndex)
	}
	return sum
}

// UpsertJob registers a new version of job, and sub (or nil) as its source.
//
// CreateIndex is kept from the existing job (index for a new one);
// ModifyIndex and JobModifyIndex become index. The version is the existing
// one plus one when the specification changed (a flip of Stop counts), or
// the existing one (keeping Stable, and VersionTag unless job sets one) when it
// did not; a new job starts at 0.
// The version is also recorded in the job versions table, which keeps at most
// JobTrackedVersions per job. Status is computed from the job's allocations
// and evaluations. job is not modified.
func (s *StateStore) UpsertJob(index uint64, sub *structs.JobSubmission, job *structs.Job) error {
	if job == nil {
		return fmt.Errorf("state: upsert job: nil job")
	}
	return s.write(index, func(tx *writeTxn) error {
		if _, err := tx.upsertJob(sub, job); err != nil {
			return fmt.Errorf("upsert job %q: %w", job.ID, err)
		}
		return nil
	})
}

// upsertJob implements UpsertJob and returns the stored job.
func (tx *writeTxn) upsertJob(sub *structs.JobSubmission, in *structs.Job) (*structs.Job, error) {
	j := in.Copy()
	j.Namespace = nsOrDefault(j.Namespace)
	existing, err := jobByID(tx.Txn, nil, j.Namespace, j.ID)
	if err != nil {
		return nil, err
	}
	j.ModifyIndex, j.JobModifyIndex = tx.index, tx.index
	switch {
	case existing == nil:
		j.CreateIndex, j.Version, j.Stable = tx.index, 0, false
	case existing.SpecChanged(j): // Stop counts as specification
		j.CreateIndex, j.Version, j.Stable = existing.CreateIndex, existing.Version+1, false
	default:
		j.CreateIndex, j.Version, j.Stable = existing.CreateIndex, existing.Version, existing.Stable
		if j.VersionTag == nil {
			j.VersionTag = existing.VersionTag
		}
	}
	if j.Status, err = tx.computeJobStatus(j); err != nil {
		return nil, err
	}
	if err := tx.insert(TableJobs, j); err != nil {
		return nil, err
	}
	if err := tx.upsertJobVersion(j); err != nil {
		return nil, err
	}
	if sub != nil {
		if err := tx.insertSubmission(sub, j); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// DeleteJob purges job (ns, id) with its versions and submissions. Its
// allocations and evaluations stay. A missing job is ErrNotFound.
func (s *StateStore) DeleteJob(index uint64, ns, id string) error {
	return s.write(index, func(tx *writeTxn) error {
		job, err := jobByID(tx.Txn, nil, ns, id)
		if err != nil {
			return err
		}
		if job == nil {
			return fmt.Errorf("delete job %q in namespace %q: %w", id, nsOrDefault(ns), ErrNotFound)
		}
		if err := tx.delete(TableJobs, job); err != nil {
			return err
		}
		versions, err := jobVersionsByID(tx.Txn, nil, job.Namespace, id)
		if err != nil {
			return err
		}
		for _, v := range versions {
			if err := tx.deleteJobVersion(v); err != nil {
				return err
			}
		}
		if err := tx.deleteScalingEvents(ns, id); err != nil {
			return err
		}
		return tx.deletePeriodicLaunch(ns, id)
	})
}

// refreshJobStatus recomputes the status of job (ns, id), if it exists, and
// stores it when it changed (bumping ModifyIndex).
func (tx *writeTxn) refreshJobStatus(ns, id string) error {
	job, err := jobByID(tx.Txn, nil, ns, id)
	if job == nil || err != nil {
		return err
	}
	status, err := tx.computeJobStatus(job)
	if err != nil || status == job.Status {
		return err
	}
	c := job.Copy()
	c.Status = status
	c.ModifyIndex = tx.index
	return tx.insert(TableJobs, c)
}

// computeJobStatus derives a job's status from its allocations (of every
// incarnation, through their counts) and evaluations:
//
//   - running: some allocation is live (not terminal);
//   - dead: the job is stopped, or it is a batch or sysbatch job whose allocations
//     (at least one) are all terminal with no pending or blocked evaluation;
//   - pending: otherwise.
//
// A template (periodic or parameterized parent) runs nothing itself: it is
// running until stopped, then dead.
func (tx *writeTxn) computeJobStatus(job *structs.Job) (string, error) {
	if job.IsTemplate() {
		if job.Stop {
			return structs.JobStatusDead, nil
		}
		return structs.JobStatusRunning, nil
	}
	counts, err := tx.currentCounts(job.Namespace, job.ID)
	if err != nil {
		return "", err
	}
	if counts != nil && counts.Live > 0 {
		return structs.JobStatusRunning, nil
	}
	if job.Stop {
		return structs.JobStatusDead, nil
	}
	if (job.Type != structs.JobTypeSysBatch && job.Type != structs.JobTypeBatch) || counts == nil {
		return structs.JobStatusPending, nil
	}
	evals, err := list[*structs.Evaluation](tx.Txn, nil, TableEvals, indexJob, job.Namespace, job.ID)
	if err != nil {
		return "", err
	}
	for _, e := range evals {
		if e.Status == structs.EvalStatusPending || e.Status == structs.EvalStatusBlocked {
			return structs.JobStatusPending, nil
		}
	}
	return structs.JobStatusDead, nil
}
