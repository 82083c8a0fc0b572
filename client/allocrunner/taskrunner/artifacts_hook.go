package taskrunner

import (
	"context"
	"fmt"
	"maps"
	"os/user"
	"strconv"
	"time"

	"github.com/drover-project/drover/client/allocrunner/taskenv"
	"github.com/drover-project/drover/client/allocrunner/taskrunner/getter"
	"github.com/drover-project/drover/nomad/structs"
)

// Artifact event types and their Details key, in Nomad's wording.
const (
	EventDownloadingArtifacts   = "Downloading Artifacts"
	EventArtifactDownloadFailed = "Failed Artifact Download"
	DetailDownloadError         = "download_error"
	downloadingArtifactsMessage = "Client is downloading artifacts"
	artifactsHookName           = "artifacts"
)

func eventDownloadingArtifacts(now time.Time) *structs.TaskEvent {
	return newEvent(EventDownloadingArtifacts, now, downloadingArtifactsMessage)
}

func eventArtifactDownloadFailed(now time.Time, err error) *structs.TaskEvent {
	e := newEvent(EventArtifactDownloadFailed, now, err.Error())
	e.DownloadError = err.Error()
	e.Details[DetailDownloadError] = e.DownloadError
	return e
}

// artifactsHook is the "artifacts" prestart hook: before a start it
// fetches the task's artifact blocks, in order, into the task directory,
// each interpolated with the task's environment (source, destination,
// options, headers). An artifact fetched once is not fetched again when
// the task restarts. A failure emits "Failed Artifact Download" with the
// error and is a recoverable exit: the restart policy decides, as in
// Nomad.
type artifactsHook struct {
	tr      *TaskRunner
	cfg     *getter.Config
	fetched map[int]bool // index of the artifacts already fetched; owned by Run
}

func newArtifactsHook(tr *TaskRunner, cfg *getter.Config) *artifactsHook {
	if cfg == nil {
		cfg = getter.DefaultConfig()
	}
	return &artifactsHook{tr: tr, cfg: cfg, fetched: map[int]bool{}}
}

func (h *artifactsHook) Name() string { return artifactsHookName }

func (h *artifactsHook) Prestart(ctx context.Context, env *taskenv.Env, task *structs.Task) (*structs.TaskEvent, error) {
	pending := false
	for i := range task.Artifacts {
		if !h.fetched[i] {
			pending = true
		}
	}
	if !pending {
		return nil, nil
	}
	tr := h.tr
	tr.emit(eventDownloadingArtifacts(tr.now()))
	td := tr.allocDir.TaskDir(tr.name)
	var owner *getter.Owner
	for i, a := range task.Artifacts {
		if h.fetched[i] || a == nil {
			continue
		}
		req := getter.Request{
			Source:   env.Replace(a.GetterSource),
			Options:  replaceMap(env, a.GetterOptions),
			Headers:  replaceMap(env, a.GetterHeaders),
			Mode:     a.GetterMode,
			Insecure: a.GetterInsecure,
			Dest:     env.Replace(a.RelativeDest),
			AllocDir: tr.allocDir.Dir(),
			TaskDir:  td.Dir,
		}
		if a.Chown {
			if owner == nil {
				o, err := taskOwner(task.User)
				if err != nil {
					err = fmt.Errorf("failed to download artifact %q: %w", a.GetterSource, err)
					return eventArtifactDownloadFailed(tr.now(), err), err
				}
				owner = o
			}
			req.Owner = owner
		}
		if err := getter.Fetch(ctx, h.cfg, req); err != nil {
			err = fmt.Errorf("failed to download artifact %q: %w", a.GetterSource, err)
			tr.logger.Warn("artifact download failed", "artifact", i+1, "error", err)
			return eventArtifactDownloadFailed(tr.now(), err), err
		}
		h.fetched[i] = true
	}
	return nil, nil
}

// replaceMap interpolates the values of m.
func replaceMap(env *taskenv.Env, m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := maps.Clone(m)
	for k, v := range out {
		out[k] = env.Replace(v)
	}
	return out
}

// taskOwner is the task's user on the host, root when the task names none.
func taskOwner(name string) (*getter.Owner, error) {
	if name == "" {
		name = "root"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("chown: %w", err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, fmt.Errorf("chown: uid of %s: %w", name, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, fmt.Errorf("chown: gid of %s: %w", name, err)
	}
	return &getter.Owner{UID: uid, GID: gid}, nil
}
