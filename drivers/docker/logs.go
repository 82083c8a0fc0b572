package docker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/logrotate"
)

// logPosFile, in the task's private dir (outside the task dir, which the
// task and `alloc fs` see), holds the timestamp of the last log line
// copied, so that a restarted client resumes the log stream where it
// stopped.
const logPosFile = ".drover-docker-logs.json"

// logPosDir is where a task's logPosFile goes: its private dir; the task
// dir for a task started before private dirs (a handle without one).
func logPosDir(cfg *drivers.TaskConfig) string {
	if cfg.PrivateDir != "" {
		return cfg.PrivateDir
	}
	return cfg.TaskDir
}

// Timing knobs; variables so tests may shorten them.
var (
	logPosSaveEvery  = time.Second      // least time between two saves of the position
	logRetryInterval = time.Second      // pause before re-following a running container
	logDrainTimeout  = 5 * time.Second  // how long an exit waits for the logs to drain
	killWait         = 30 * time.Second // how long StopTask waits after SIGKILL
)

type logPos struct {
	Last time.Time
}

// logStreamer copies a container's stdout and stderr to the task's rotated
// log files (drivers/logrotate: a re-attached streamer continues the
// newest file), following the container until it stops or the streamer is
// cancelled. Each line's daemon timestamp is recorded; lines not after the
// last recorded one are dropped, so re-following with since = last never
// duplicates.
type logStreamer struct {
	logger      hclog.Logger
	cli         containerLogger
	containerID string
	files       logFiles
	posPath     string // "" = position not persisted

	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	last     time.Time
	lastSave time.Time
}

// logFiles are where a task's output goes: the first files of its streams
// ("" discards), inside within (the allocation's shared dir), rotated with
// limits.
type logFiles struct {
	within, stdout, stderr string
	limits                 logrotate.Limits
	tty                    bool // the container has a TTY: one raw stream, copied to stdout
}

// containerLogger is the part of the docker client the streamer uses.
type containerLogger interface {
	ContainerLogs(ctx context.Context, id string, o container.LogsOptions) (io.ReadCloser, error)
	ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error)
}

// startLogStreamer starts following a container's logs from since (zero:
// from the beginning).
func startLogStreamer(logger hclog.Logger, cli containerLogger, containerID, posDir string, files logFiles, since time.Time) *logStreamer {
	ctx, cancel := context.WithCancel(context.Background())
	s := &logStreamer{
		logger: logger, cli: cli, containerID: containerID, files: files,
		cancel: cancel, done: make(chan struct{}), last: since,
	}
	if posDir != "" {
		s.posPath = filepath.Join(posDir, logPosFile)
	}
	go s.run(ctx)
	return s
}

// readLogPos returns the saved position in posDir, or zero.
func readLogPos(posDir string) time.Time {
	if posDir == "" {
		return time.Time{}
	}
	b, err := os.ReadFile(filepath.Join(posDir, logPosFile))
	if err != nil {
		return time.Time{}
	}
	var p logPos
	if json.Unmarshal(b, &p) != nil {
		return time.Time{}
	}
	return p.Last
}

// stop cancels the streamer and waits for it to end.
func (s *logStreamer) stop() {
	s.cancel()
	<-s.done
}

// wait waits up to timeout for the stream to end by itself (the container
// stopped), then cancels it.
func (s *logStreamer) wait(timeout time.Duration) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		s.logger.Warn("container logs did not drain in time", "container", s.containerID, "timeout", timeout)
		s.stop()
	}
}

func (s *logStreamer) run(ctx context.Context) {
	defer close(s.done)
	defer s.savePos(true)
	stdout, err := openLog(s.files.within, s.files.stdout, s.files.limits)
	if err != nil {
		s.logger.Error("opening stdout log", "error", err)
		return
	}
	defer stdout.Close()
	stderr, err := openLog(s.files.within, s.files.stderr, s.files.limits)
	if err != nil {
		s.logger.Error("opening stderr log", "error", err)
		return
	}
	defer stderr.Close()
	outW := &lineWriter{s: s, w: stdout}
	errW := &lineWriter{s: s, w: stderr}
	for {
		s.follow(ctx, outW, errW)
		if ctx.Err() != nil {
			return
		}
		// The stream ends when the container stops; re-follow only when it
		// still runs (the daemon restarted or the connection broke).
		ins, err := s.cli.ContainerInspect(ctx, s.containerID)
		if (err == nil && !containerRunning(ins)) || cerrdefs.IsNotFound(err) {
			return
		}
		if err != nil && ctx.Err() == nil {
			s.logger.Debug("inspecting container to resume logs", "container", s.containerID, "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(logRetryInterval):
		}
	}
}

// follow streams the logs once, from the last recorded line.
func (s *logStreamer) follow(ctx context.Context, outW, errW io.Writer) {
	opts := container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: true, Timestamps: true}
	if last := s.lastSeen(); !last.IsZero() {
		opts.Since = fmt.Sprintf("%d.%09d", last.Unix(), last.Nanosecond())
	}
	body, err := s.cli.ContainerLogs(ctx, s.containerID, opts)
	if err != nil {
		if ctx.Err() == nil {
			s.logger.Warn("following container logs", "container", s.containerID, "error", err)
		}
		return
	}
	defer body.Close()
	if s.files.tty {
		err = copyLines(outW, body)
	} else {
		_, err = stdcopy.StdCopy(outW, errW, body)
	}
	if err != nil && ctx.Err() == nil {
		s.logger.Debug("container log stream ended", "container", s.containerID, "error", err)
	}
}

// copyLines copies the raw log stream of a TTY container (not multiplexed:
// stdout and stderr are one stream) to w one line per Write, as the
// lineWriter wants its timestamped messages.
func copyLines(w io.Writer, r io.Reader) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if _, werr := w.Write(line); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (s *logStreamer) lastSeen() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// accept records ts and reports whether its line is new.
func (s *logStreamer) accept(ts time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.last.IsZero() && !ts.After(s.last) {
		return false
	}
	s.last = ts
	return true
}

// savePos persists the position, at most once per logPosSaveEvery unless
// force.
func (s *logStreamer) savePos(force bool) {
	if s.posPath == "" {
		return
	}
	s.mu.Lock()
	last, now := s.last, time.Now()
	if last.IsZero() || (!force && now.Sub(s.lastSave) < logPosSaveEvery) {
		s.mu.Unlock()
		return
	}
	s.lastSave = now
	s.mu.Unlock()
	b, _ := json.Marshal(logPos{Last: last})
	tmp := s.posPath + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err == nil {
		_ = os.Rename(tmp, s.posPath)
	}
}

// lineWriter receives one log message per Write (the daemon frames each
// message with its timestamp), strips the timestamp and appends the rest.
type lineWriter struct {
	s *logStreamer
	w io.Writer
}

func (lw *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	if i := bytes.IndexByte(p, ' '); i > 0 {
		if ts, err := time.Parse(time.RFC3339Nano, string(p[:i])); err == nil {
			if !lw.s.accept(ts) {
				return n, nil
			}
			p = p[i+1:]
		}
	}
	if _, err := lw.w.Write(p); err != nil {
		return 0, err
	}
	lw.s.savePos(false)
	return n, nil
}

// openLog opens a stream's rotated log files; "" (logs disabled) discards.
func openLog(within, path string, limits logrotate.Limits) (io.WriteCloser, error) {
	if path == "" {
		return nopCloser{io.Discard}, nil
	}
	return logrotate.OpenIn(within, path, limits)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// containerRunning reports whether an inspected container is running.
func containerRunning(ins container.InspectResponse) bool {
	return ins.ContainerJSONBase != nil && ins.State != nil && ins.State.Running
}
