package imageresolve

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/drover-project/drover/nomad/structs"
)

// DockerDriver is the driver whose tasks are pinned.
const DockerDriver = "docker"

// PinJob returns a copy of job in which every Docker task's image that is
// given by tag (and does not opt out with pin_digest = false) is rewritten as
// "name:tag@sha256:…", the tag's digest now. Images given by digest are
// kept as written. job is not modified; when nothing needs resolving the job
// itself is returned.
//
// Invalid image settings, and tags that cannot be resolved, are refused with
// a *structs.RequestError (HTTP 400) naming the group, the task, the image
// and the registry's answer. Tags are resolved concurrently, each once.
func PinJob(ctx context.Context, r *Resolver, job *structs.Job) (*structs.Job, error) {
	type site struct{ g, t int }
	type want struct {
		ref  Ref
		auth *Auth
	}
	sites := map[site]want{}
	var errs []error
	for gi, tg := range job.TaskGroups {
		for ti, t := range tg.Tasks {
			if t.Driver != DockerDriver {
				continue
			}
			where := fmt.Sprintf("group %q: task %q", tg.Name, t.Name)
			s, err := ParseSettings(t.Config)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			image, _ := t.Config["image"].(string)
			if image == "" {
				continue // Validate reports it
			}
			ref, err := Parse(image)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			if s.AutoUpdate && !ref.TagWritten && ref.Digest != "" {
				errs = append(errs, fmt.Errorf("%s: auto_update needs an image with a tag, got %q", where, image))
				continue
			}
			if !s.PinDigest || ref.Digest != "" {
				continue
			}
			sites[site{gi, ti}] = want{ref, s.Auth}
		}
	}
	if len(errs) > 0 {
		return nil, &structs.RequestError{Kind: structs.ErrBadRequest, Msg: errors.Join(errs...).Error()}
	}
	if len(sites) == 0 {
		return job, nil
	}

	// Resolve each distinct (reference, credential) once.
	type key struct{ ref, cred string }
	type result struct {
		digest string
		err    error
	}
	results := map[key]*result{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, w := range sites {
		k := key{w.ref.TagRef(), w.auth.Key()}
		if _, ok := results[k]; ok {
			continue
		}
		res := &result{}
		results[k] = res
		wg.Add(1)
		go func(w want) {
			defer wg.Done()
			d, err := r.Resolve(ctx, w.ref, w.auth)
			mu.Lock()
			res.digest, res.err = d, err
			mu.Unlock()
		}(w)
	}
	wg.Wait()

	out := job.Copy()
	for gi, tg := range out.TaskGroups {
		var tgCopy *structs.TaskGroup
		for ti, t := range tg.Tasks {
			w, ok := sites[site{gi, ti}]
			if !ok {
				continue
			}
			res := results[key{w.ref.TagRef(), w.auth.Key()}]
			if res.err != nil {
				errs = append(errs, fmt.Errorf("group %q: task %q: image %q could not be resolved to a digest: %v",
					tg.Name, t.Name, w.ref.TagRef(), res.err))
				continue
			}
			if tgCopy == nil {
				c := *tg
				c.Tasks = append([]*structs.Task(nil), tg.Tasks...)
				tgCopy = &c
				out.TaskGroups[gi] = tgCopy
			}
			tc := *t
			tc.Config = maps.Clone(t.Config)
			tc.Config["image"] = w.ref.Pinned(res.digest)
			tgCopy.Tasks[ti] = &tc
		}
	}
	if len(errs) > 0 {
		return nil, &structs.RequestError{Kind: structs.ErrBadRequest, Msg: errors.Join(errs...).Error()}
	}
	return out, nil
}

// SetImage returns a copy of job with the image of task (group, task) set
// to image; job is not modified. It reports false when there is no such
// task.
func SetImage(job *structs.Job, group, task, image string) (*structs.Job, bool) {
	out := job.Copy()
	for gi, tg := range out.TaskGroups {
		if tg.Name != group {
			continue
		}
		for ti, t := range tg.Tasks {
			if t.Name != task {
				continue
			}
			c := *tg
			c.Tasks = append([]*structs.Task(nil), tg.Tasks...)
			tc := *t
			tc.Config = maps.Clone(t.Config)
			tc.Config["image"] = image
			c.Tasks[ti] = &tc
			out.TaskGroups[gi] = &c
			return out, true
		}
	}
	return nil, false
}
