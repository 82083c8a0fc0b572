package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/distribution/reference"
	"github.com/docker/docker/api/types/image"

	"github.com/drover-project/drover/drivers"
)

// progressEvery is the least time between two progress callbacks of a pull
// (the final one is always made).
var progressEvery = 500 * time.Millisecond

// errPullTimeout and errNoProgress are the causes of a cancelled pull.
var (
	errPullTimeout = errors.New("pull timed out")
	errNoProgress  = errors.New("pull made no progress")
)

// PullError is a failed image pull; its text names the image and the
// registry's (or the daemon's) error: failed to pull image "web:v2": ...
type PullError struct {
	Image string
	Err   error
}

func (e *PullError) Error() string { return fmt.Sprintf("failed to pull image %q: %v", e.Image, e.Err) }
func (e *PullError) Unwrap() error { return e.Err }

// pullRef returns the reference to pull and inspect: name@digest when the
// image is pinned (a tag next to the digest is dropped), else name:tag
// (":latest" when no tag is given).
func pullRef(img string) (string, error) {
	named, err := reference.ParseNormalizedNamed(img)
	if err != nil {
		return "", err
	}
	if dg, ok := named.(reference.Digested); ok {
		c, err := reference.WithDigest(reference.TrimNamed(named), dg.Digest())
		if err != nil {
			return "", err
		}
		return reference.FamiliarString(c), nil
	}
	return reference.FamiliarString(reference.TagNameOnly(named)), nil
}

// pullMessage is one JSON message of the daemon's pull stream.
type pullMessage struct {
	ID             string `json:"id"`
	Status         string `json:"status"`
	ProgressDetail struct {
		Current int64 `json:"current"`
		Total   int64 `json:"total"`
	} `json:"progressDetail"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// layerProgress is the download progress of one layer.
type layerProgress struct {
	done, total int64
	complete    bool
}

// pullTracker aggregates the download progress of a pull's layers.
type pullTracker struct {
	image  string
	layers map[string]*layerProgress
	order  []string
	last   pullMessage
}

func newPullTracker(image string) *pullTracker {
	return &pullTracker{image: image, layers: map[string]*layerProgress{}}
}

// apply records a message and reports whether it is news (progress).
func (p *pullTracker) apply(m pullMessage) bool {
	news := m.ID != p.last.ID || m.Status != p.last.Status || m.ProgressDetail != p.last.ProgressDetail
	p.last = m
	if m.ID == "" {
		return news
	}
	l := p.layers[m.ID]
	isLayer := m.Status == "Pulling fs layer" || m.Status == "Waiting" || m.Status == "Downloading" ||
		m.Status == "Verifying Checksum" || m.Status == "Download complete" || m.Status == "Extracting" ||
		m.Status == "Pull complete" || m.Status == "Already exists"
	if l == nil {
		if !isLayer {
			return news
		}
		l = &layerProgress{}
		p.layers[m.ID] = l
		p.order = append(p.order, m.ID)
	}
	switch m.Status {
	case "Downloading":
		if m.ProgressDetail.Total > 0 {
			l.total = m.ProgressDetail.Total
		}
		if m.ProgressDetail.Current > l.done {
			l.done = m.ProgressDetail.Current
		}
	case "Verifying Checksum", "Download complete", "Extracting", "Pull complete", "Already exists":
		if m.Status == "Extracting" && l.total == 0 && m.ProgressDetail.Total > 0 {
			l.total = m.ProgressDetail.Total
		}
		l.complete = true
		l.done = l.total
	}
	return news
}

// progress returns the aggregate progress.
func (p *pullTracker) progress(final bool) drivers.PrepareProgress {
	var done, total int64
	complete := 0
	for _, id := range p.order {
		l := p.layers[id]
		if final {
			l.complete, l.done = true, l.total
		}
		done += l.done
		total += l.total
		if l.complete {
			complete++
		}
	}
	msg := fmt.Sprintf("Pulling image %s: %d/%d layers, %s of %s", p.image, complete, len(p.order), humanBytes(done), humanBytes(total))
	if len(p.order) == 0 && p.last.Status != "" {
		msg = fmt.Sprintf("Pulling image %s: %s", p.image, p.last.Status)
	}
	if final {
		msg = fmt.Sprintf("Pulled image %s: %d layers, %s", p.image, len(p.order), humanBytes(total))
	}
	return drivers.PrepareProgress{Message: msg, BytesDone: done, BytesTotal: total}
}

func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}

// pullOptions is what one pull needs.
type pullOptions struct {
	Image           string // as written in the task config, for messages
	Auth            string // X-Registry-Auth value or ""
	Timeout         time.Duration
	ActivityTimeout time.Duration
	Progress        func(drivers.PrepareProgress)
}

// pull pulls an image through the daemon, streaming its progress. It fails
// with a *PullError when the daemon or the registry reports an error, when
// the pull takes longer than Timeout or makes no progress for
// ActivityTimeout; a cancelled ctx gives ctx's error (wrapped in a
// PullError).
func (d *Driver) pull(ctx context.Context, o pullOptions) error {
	ref, err := pullRef(o.Image)
	if err != nil {
		return &PullError{Image: o.Image, Err: err}
	}
	cli, err := d.client()
	if err != nil {
		return &PullError{Image: o.Image, Err: err}
	}
	ctx, cancel := context.WithTimeoutCause(ctx, o.Timeout, errPullTimeout)
	defer cancel()
	ctx, cancelCause := context.WithCancelCause(ctx)
	defer cancelCause(nil)
	wd := startWatchdog(ctx, o.ActivityTimeout, func() { cancelCause(errNoProgress) })
	defer wd.stop()

	d.logger.Debug("pulling image", "image", o.Image, "ref", ref)
	tracker := newPullTracker(o.Image)
	var lastReport time.Time
	report := func(final bool) {
		if o.Progress == nil {
			return
		}
		now := time.Now()
		if !final && !lastReport.IsZero() && now.Sub(lastReport) < progressEvery {
			return
		}
		lastReport = now
		o.Progress(tracker.progress(final))
	}

	err = func() error {
		body, err := cli.ImagePull(ctx, ref, image.PullOptions{RegistryAuth: o.Auth})
		if err != nil {
			return err
		}
		defer body.Close()
		defer context.AfterFunc(ctx, func() { body.Close() })() // unblock the decoder
		return readPullStream(body, func(m pullMessage) {
			if tracker.apply(m) {
				wd.touch()
				report(false)
			}
		})
	}()
	if err != nil || ctx.Err() != nil {
		return &PullError{Image: o.Image, Err: pullCause(ctx, o, err)}
	}
	report(true)
	d.logger.Debug("pulled image", "image", o.Image)
	return nil
}

// readPullStream decodes the daemon's pull messages until the end of the
// stream; an error message in the stream is returned as an error.
func readPullStream(r io.Reader, onMessage func(pullMessage)) error {
	dec := json.NewDecoder(r)
	for {
		var m pullMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			return errors.New(m.ErrorDetail.Message)
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
		onMessage(m)
	}
}

// watchdog calls expire once when touch was not called for idle.
type watchdog struct {
	mu   sync.Mutex
	last time.Time
	done chan struct{}
}

func startWatchdog(ctx context.Context, idle time.Duration, expire func()) *watchdog {
	w := &watchdog{last: time.Now(), done: make(chan struct{})}
	go func() {
		t := time.NewTicker(max(idle/10, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				w.mu.Lock()
				quiet := time.Since(w.last)
				w.mu.Unlock()
				if quiet >= idle {
					expire()
					return
				}
			}
		}
	}()
	return w
}

func (w *watchdog) touch() {
	w.mu.Lock()
	w.last = time.Now()
	w.mu.Unlock()
}

func (w *watchdog) stop() { close(w.done) }

// pullCause explains why a pull ended with err.
func pullCause(ctx context.Context, o pullOptions, err error) error {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errNoProgress):
		return fmt.Errorf("no progress for %v (pull_activity_timeout)", o.ActivityTimeout)
	case errors.Is(cause, errPullTimeout):
		return fmt.Errorf("timed out after %v (image_pull_timeout)", o.Timeout)
	case cause != nil:
		return cause
	}
	return cleanDaemonError(err)
}

// cleanDaemonError drops the client's "Error response from daemon: "
// prefix from err's text (errors.Is and As still see the original).
func cleanDaemonError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "Error response from daemon: "); ok {
		return &wrapped{msg: rest, err: err}
	}
	return err
}

type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }
