package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/drivers/logrotate"
	"github.com/drover-project/drover/nomad/structs"
)

// logChunk is the most data read into one frame or write.
const logChunk = 64 << 10

// Frame file events, as Nomad names them.
const fileEventTruncated = "file truncated"

// logStream serves a task's log stream (its rotated files, oldest first,
// as one) or one file of the allocation: raw bytes (plain) or JSON frames
// {"Data": base64, "File", "Offset"} one after another, as the nomad/api
// client's AllocFS.Logs decodes them; each frame names the file its data
// is from and the offset in it after the data. With follow, it keeps
// reading as the files grow and rotate until the caller goes away or the
// allocation's runner is done and the files are drained; a framed stream
// sends an empty heartbeat frame when silent for heartbeat.
type logStream struct {
	src       logSource
	frameName func(path string) string // a file's name in frames
	params    logParams
	done      <-chan struct{} // closed when the allocation's runner is done
	poll      time.Duration
	heartbeat time.Duration
}

// logSource is what a logStream reads: logrotate.Reader for a task's
// stream, fileSource for one file.
type logSource interface {
	// Read returns io.EOF at the current end (more may come) and
	// logrotate.ErrTruncated when the file shrank (reading restarts at 0).
	Read(p []byte) (int, error)
	Path() string  // the file the last Read read from
	Offset() int64 // the offset in it after that read
	Close() error
}

// startOffset is where reading begins in a file of size bytes.
func startOffset(origin string, offset, size int64) int64 {
	if origin == "end" {
		return max(size-offset, 0)
	}
	return min(offset, size)
}

// fileSource reads one file, opened with open when it first exists, from
// the origin and offset of params.
type fileSource struct {
	path   string
	open   func() (*os.File, error)
	params logParams
	f      *os.File
	pos    int64
}

func (fs *fileSource) Read(p []byte) (int, error) {
	if fs.f == nil {
		f, err := fs.open()
		if errors.Is(err, iofs.ErrNotExist) {
			return 0, io.EOF // not written yet
		}
		if err != nil {
			return 0, err
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return 0, err
		}
		fs.f, fs.pos = f, startOffset(fs.params.origin, fs.params.offset, info.Size())
	}
	n, err := fs.f.ReadAt(p, fs.pos)
	if n > 0 {
		fs.pos += int64(n)
		return n, nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("reading %s: %w", fs.path, err)
	}
	if info, err := fs.f.Stat(); err == nil && info.Size() < fs.pos {
		fs.pos = 0
		return 0, logrotate.ErrTruncated
	}
	return 0, io.EOF
}

func (fs *fileSource) Path() string  { return fs.path }
func (fs *fileSource) Offset() int64 { return fs.pos }

func (fs *fileSource) Close() error {
	if fs.f != nil {
		return fs.f.Close()
	}
	return nil
}

func (ls *logStream) serve(ctx context.Context, w http.ResponseWriter) error {
	defer ls.src.Close()
	ls.writeHeader(w)
	out := newLogWriter(w, ls.params.plain)
	buf := make([]byte, logChunk)
	lastSend := time.Now()
	drain := false // the runner is done: stop at the next end
	for {
		n, err := ls.src.Read(buf)
		if n > 0 {
			if werr := out.data(buf[:n], ls.frameName(ls.src.Path()), ls.src.Offset()); werr != nil {
				return werr
			}
			lastSend = time.Now()
			continue
		}
		switch {
		case errors.Is(err, logrotate.ErrTruncated):
			if werr := out.event(fileEventTruncated, ls.frameName(ls.src.Path())); werr != nil {
				return werr
			}
			continue
		case err != nil && !errors.Is(err, io.EOF):
			return err
		}
		if !ls.params.follow || drain {
			return nil
		}
		if !ls.params.plain && time.Since(lastSend) >= ls.heartbeat {
			if werr := out.heartbeat(); werr != nil {
				return werr
			}
			lastSend = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ls.done:
			drain = true
		case <-time.After(ls.poll):
		}
	}
}

func (ls *logStream) writeHeader(w http.ResponseWriter) {
	if ls.params.plain {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

// logWriter writes log data raw or framed, flushing after each write.
type logWriter struct {
	w     io.Writer
	flush func()
	enc   *json.Encoder // nil when plain
}

func newLogWriter(w http.ResponseWriter, plain bool) *logWriter {
	lw := &logWriter{w: w, flush: func() {}}
	if fl, ok := w.(http.Flusher); ok {
		lw.flush = fl.Flush
	}
	if !plain {
		lw.enc = json.NewEncoder(w)
	}
	return lw
}

// data writes b, read from file up to offset end.
func (lw *logWriter) data(b []byte, file string, end int64) error {
	var err error
	if lw.enc == nil {
		_, err = lw.w.Write(b)
	} else {
		err = lw.enc.Encode(&api.StreamFrame{Data: b, File: file, Offset: end})
	}
	lw.flush()
	return err
}

func (lw *logWriter) event(ev, file string) error {
	if lw.enc == nil {
		return nil
	}
	err := lw.enc.Encode(&api.StreamFrame{File: file, FileEvent: ev})
	lw.flush()
	return err
}

func (lw *logWriter) heartbeat() error {
	err := lw.enc.Encode(&api.StreamFrame{})
	lw.flush()
	return err
}

// relLogName names a log file in frames: its path relative to the
// allocation's directory ("alloc/logs/web.stdout.0"), or its base name.
func relLogName(allocRoot, allocID, path string) string {
	if rel, err := filepath.Rel(filepath.Join(allocRoot, allocID), path); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return filepath.Base(path)
}

// allocStats is the allocation's resource usage. The client does not
// measure tasks yet: every figure is zero, but the nested stats are never
// nil (the CLI dereferences them).
func allocStats(a *structs.Allocation, now int64) *api.AllocResourceUsage {
	usage := func() *api.ResourceUsage {
		return &api.ResourceUsage{MemoryStats: &api.MemoryStats{Measured: []string{}}, CpuStats: &api.CpuStats{Measured: []string{}}}
	}
	out := &api.AllocResourceUsage{ResourceUsage: usage(), Tasks: map[string]*api.TaskResourceUsage{}, Timestamp: now}
	if a.Job != nil {
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
			for _, t := range tg.Tasks {
				out.Tasks[t.Name] = &api.TaskResourceUsage{ResourceUsage: usage(), Timestamp: now, Pids: map[string]*api.ResourceUsage{}}
			}
		}
	}
	return out
}
