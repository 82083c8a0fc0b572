package imagewatcher

import (
	"slices"
	"sort"

	"github.com/drover-project/drover/nomad/imageresolve"
	"github.com/drover-project/drover/nomad/structs"
)

// JobHistory is what TargetsOf needs of a job besides its current version:
// its retained versions and its deployments.
type JobHistory struct {
	Versions    []*structs.Job
	Deployments []*structs.Deployment
}

// TargetsOf returns the auto-updated Docker tasks of job's current
// version, sorted by group and task. A stopped job has none. Tasks whose
// settings or image do not parse are skipped (registration refuses them).
func TargetsOf(job *structs.Job, h JobHistory) []Target {
	if job == nil || job.Stop {
		return nil
	}
	var out []Target
	for _, tg := range job.TaskGroups {
		for _, t := range tg.Tasks {
			if t.Driver != imageresolve.DockerDriver {
				continue
			}
			s, err := imageresolve.ParseSettings(t.Config)
			if err != nil || !s.AutoUpdate {
				continue
			}
			image, _ := t.Config["image"].(string)
			ref, err := imageresolve.Parse(image)
			if err != nil {
				continue
			}
			id := structs.ImageWatchID{Namespace: job.Namespace, JobID: job.ID, Group: tg.Name, Task: t.Name}
			out = append(out, Target{
				ID: id, JobModifyIndex: job.JobModifyIndex, JobVersion: job.Version, PinnedAt: job.SubmitTime, Ref: ref, Auth: s.Auth,
				Pinned: ref.Digest, Interval: s.Interval, Policy: PolicyOf(s),
				Failed: FailedDigests(id, ref.TagRef(), h),
			})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ID.Group != out[j].ID.Group {
			return out[i].ID.Group < out[j].ID.Group
		}
		return out[i].ID.Task < out[j].ID.Task
	})
	return out
}

// FailedDigests lists the failed deployments of task id with tag tagRef
// whose job version changed the task's digest (compared with the newest
// older version retained): a deployment that failed for another reason
// does not make an unchanged digest bad. They are in job version order,
// each digest once (its newest failure).
func FailedDigests(id structs.ImageWatchID, tagRef string, h JobHistory) []Failure {
	byVersion := map[uint64]*structs.Job{}
	for _, v := range h.Versions {
		byVersion[v.Version] = v
	}
	deps := append([]*structs.Deployment(nil), h.Deployments...)
	sort.SliceStable(deps, func(i, j int) bool { return deps[i].JobVersion < deps[j].JobVersion })
	var out []Failure
	for _, d := range deps {
		if d.Status != structs.DeploymentStatusFailed {
			continue
		}
		v := byVersion[d.JobVersion]
		if v == nil {
			continue
		}
		ref, ok := taskRef(v, id)
		if !ok || ref.Digest == "" || ref.TagRef() != tagRef {
			continue
		}
		var prev *structs.Job
		for _, o := range h.Versions {
			if o.Version < d.JobVersion && (prev == nil || o.Version > prev.Version) {
				prev = o
			}
		}
		if prev != nil {
			if pr, ok := taskRef(prev, id); ok && pr.Digest == ref.Digest {
				continue
			}
		}
		f := Failure{Digest: ref.Digest, JobVersion: d.JobVersion, DeploymentID: d.ID, Index: d.ModifyIndex}
		if i := slices.IndexFunc(out, func(o Failure) bool { return o.Digest == f.Digest }); i >= 0 {
			out[i] = f
		} else {
			out = append(out, f)
		}
	}
	return out
}

// taskRef returns the parsed image of task id in job.
func taskRef(job *structs.Job, id structs.ImageWatchID) (imageresolve.Ref, bool) {
	tg := job.LookupTaskGroup(id.Group)
	if tg == nil {
		return imageresolve.Ref{}, false
	}
	for _, t := range tg.Tasks {
		if t.Name == id.Task {
			image, _ := t.Config["image"].(string)
			r, err := imageresolve.Parse(image)
			return r, err == nil
		}
	}
	return imageresolve.Ref{}, false
}
