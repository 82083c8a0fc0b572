package imageresolve

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"

	"github.com/drover-project/drover/nomad/structs"
)

// DockerDriver is the driver whose tasks are pinned.
const DockerDriver = "docker"

// Pinned is the outcome of PinJob.
type Pinned struct {
	// Job is the job with its images pinned (the submitted job itself when
	// nothing needed resolving).
	Job *structs.Job
	// Unpinned lists the tasks whose tag could not be resolved because
	// their registry could not be reached (see Unavailable): each is
	// stored by tag, or keeps the current version's pin (Unpinned.Kept).
	Unpinned []Unpinned
	// Resolutions lists every distinct (reference, credential) resolved,
	// with its answer: the server records them as checks of the tag.
	Resolutions []Resolution
}

// Warnings returns one warning per task in Unpinned.
func (p *Pinned) Warnings() []string {
	var out []string
	for _, u := range p.Unpinned {
		out = append(out, u.Warning())
	}
	return out
}

// Unpinned is a task stored with its tag only.
type Unpinned struct {
	Group, Task string
	// Image is the tag reference, Registry its host.
	Image, Registry string
	AutoUpdate      bool
	Err             error
	// Kept is the digest of the current version's pin of the same tag,
	// kept because the tag could not be resolved ("": stored by tag).
	Kept string
}

// Warning is the text the registration answer carries for u.
func (u Unpinned) Warning() string {
	if u.Kept != "" {
		return fmt.Sprintf("group %q: task %q: image %q could not be resolved: its registry could not be reached (%v); "+
			"the current version's pin %s is kept", u.Group, u.Task, u.Image, u.Err, u.Kept)
	}
	w := fmt.Sprintf("group %q: task %q: image %q was not pinned to a digest: its registry could not be reached (%v); "+
		"this version stores the tag and the nodes pull it", u.Group, u.Task, u.Image, u.Err)
	if u.AutoUpdate {
		w += "; the image watcher takes its next good check as the digest the nodes run and pins the tag's next move"
	}
	return w
}

// Resolution is one resolution PinJob made.
type Resolution struct {
	Ref    Ref
	Auth   *Auth
	Digest string
	Err    error
	// AutoUpdate reports whether a task with auto_update uses it.
	AutoUpdate bool
}

// PinOptions are PinJob's options.
type PinOptions struct {
	// Off is the servers' image_pinning = "off": nothing is resolved and
	// auto_update is refused.
	Off bool
	// Current is the job's current version (nil: none): when a tag cannot
	// be resolved, the same task's pin of the same tag there is kept.
	Current *structs.Job
}

// PinJob returns job with every Docker task's image that is given by tag
// (and does not opt out with pin_digest = false) rewritten as
// "name:tag@sha256:…", the tag's digest now. Images given by digest are
// kept as written. job is not modified: the result holds a copy, or job
// itself when nothing needs resolving.
//
// Invalid image settings, and tags the registry refuses (no such tag, bad
// credentials), are refused with a *structs.RequestError (HTTP 400) naming
// the group, the task, the image and the registry's answer. A tag whose
// registry cannot be reached now (Unavailable) is listed in
// Pinned.Unpinned and keeps the pin the current version has for the same
// task and tag (a re-run of an unchanged jobspec stays no change), else is
// stored by tag. Tags are resolved concurrently, each once.
func PinJob(ctx context.Context, r *Resolver, job *structs.Job, opts PinOptions) (*Pinned, error) {
	pin := !opts.Off
	type site struct{ g, t int }
	type want struct {
		ref  Ref
		auth *Auth
		auto bool
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
			if s.AutoUpdate && !pin {
				errs = append(errs, fmt.Errorf(`%s: auto_update = true needs image pinning, and the servers run with image_pinning = "off"`, where))
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
			if !pin || !s.PinDigest || ref.Digest != "" {
				continue
			}
			sites[site{gi, ti}] = want{ref, s.Auth, s.AutoUpdate}
		}
	}
	if len(errs) > 0 {
		return nil, &structs.RequestError{Kind: structs.ErrBadRequest, Msg: errors.Join(errs...).Error()}
	}
	if len(sites) == 0 {
		return &Pinned{Job: job}, nil
	}

	// Resolve each distinct (reference, credential) once.
	type key struct{ ref, cred string }
	results := map[key]*Resolution{}
	var order []key
	var wg sync.WaitGroup
	for _, w := range sites {
		k := key{w.ref.TagRef(), w.auth.Key()}
		if res, ok := results[k]; ok {
			res.AutoUpdate = res.AutoUpdate || w.auto
			continue
		}
		res := &Resolution{Ref: w.ref, Auth: w.auth, AutoUpdate: w.auto}
		results[k] = res
		order = append(order, k)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res.Digest, res.Err = r.Resolve(ctx, res.Ref, res.Auth)
		}()
	}
	wg.Wait()

	out := &Pinned{Job: job.Copy()}
	sort.Slice(order, func(i, j int) bool { return order[i].ref+"|"+order[i].cred < order[j].ref+"|"+order[j].cred })
	for _, k := range order {
		out.Resolutions = append(out.Resolutions, *results[k])
	}
	for gi, tg := range out.Job.TaskGroups {
		var tgCopy *structs.TaskGroup
		for ti, t := range tg.Tasks {
			w, ok := sites[site{gi, ti}]
			if !ok {
				continue
			}
			res := results[key{w.ref.TagRef(), w.auth.Key()}]
			digest := res.Digest
			if Unavailable(res.Err) {
				u := Unpinned{Group: tg.Name, Task: t.Name, Image: w.ref.TagRef(), Registry: w.ref.Registry, AutoUpdate: w.auto,
					Err: res.Err, Kept: currentPin(opts.Current, tg.Name, t.Name, w.ref.TagRef())}
				out.Unpinned = append(out.Unpinned, u)
				if u.Kept == "" {
					continue
				}
				digest = u.Kept
			} else if res.Err != nil {
				errs = append(errs, fmt.Errorf("group %q: task %q: image %q could not be resolved to a digest: %v",
					tg.Name, t.Name, w.ref.TagRef(), res.Err))
				continue
			}
			if tgCopy == nil {
				c := *tg
				c.Tasks = append([]*structs.Task(nil), tg.Tasks...)
				tgCopy = &c
				out.Job.TaskGroups[gi] = tgCopy
			}
			tc := *t
			tc.Config = maps.Clone(t.Config)
			tc.Config["image"] = w.ref.Pinned(digest)
			tgCopy.Tasks[ti] = &tc
		}
	}
	if len(errs) > 0 {
		return nil, &structs.RequestError{Kind: structs.ErrBadRequest, Msg: errors.Join(errs...).Error()}
	}
	return out, nil
}

// currentPin returns the digest the task (group, task) of current pins
// for tagRef, or "".
func currentPin(current *structs.Job, group, task, tagRef string) string {
	if current == nil {
		return ""
	}
	tg := current.LookupTaskGroup(group)
	if tg == nil {
		return ""
	}
	t := tg.LookupTask(task)
	if t == nil || t.Driver != DockerDriver {
		return ""
	}
	image, _ := t.Config["image"].(string)
	ref, err := Parse(image)
	if err != nil || ref.Digest == "" || ref.TagRef() != tagRef {
		return ""
	}
	return ref.Digest
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
