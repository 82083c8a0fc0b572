package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad/structs"
)

// logChunk is the most data read into one frame or write.
const logChunk = 64 << 10

// Frame file events, as Nomad names them.
const fileEventTruncated = "file truncated"

// logStream serves one log file: raw bytes (plain) or JSON frames
// {"Data": base64, "File", "Offset"} one after another, as the nomad/api
// client's AllocFS.Logs decodes them. With follow, it keeps reading as the
// file grows until the caller goes away or the allocation's runner is done
// and the file is drained; a framed stream sends an empty heartbeat frame
// when silent for heartbeat.
type logStream struct {
	path      string // the log file
	file      string // its name in frames, relative to the alloc dir
	params    logParams
	done      <-chan struct{} // closed when the allocation's runner is done
	poll      time.Duration
	heartbeat time.Duration
	// opener, when set, opens the file instead of os.Open(path) (the
	// allocation file system opens through an os.Root).
	opener func() (*os.File, error)
}

// openFile opens the streamed file once.
func (ls *logStream) openFile() (*os.File, error) {
	if ls.opener != nil {
		return ls.opener()
	}
	return os.Open(ls.path)
}

// startOffset is where reading begins in a file of size bytes.
func startOffset(origin string, offset, size int64) int64 {
	if origin == "end" {
		return max(size-offset, 0)
	}
	return min(offset, size)
}

func (ls *logStream) serve(ctx context.Context, w http.ResponseWriter) error {
	f, err := ls.open(ctx)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			ls.writeHeader(w) // not written yet: nothing to show
			return nil
		}
		writeError(w, err)
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		writeError(w, err)
		return err
	}
	pos := startOffset(ls.params.origin, ls.params.offset, info.Size())
	ls.writeHeader(w)
	out := newLogWriter(w, ls.params.plain, ls.file)
	buf := make([]byte, logChunk)
	lastSend := time.Now()
	for {
		n, err := f.ReadAt(buf, pos)
		if n > 0 {
			pos += int64(n)
			if werr := out.data(buf[:n], pos); werr != nil {
				return werr
			}
			lastSend = time.Now()
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading %s: %w", ls.path, err)
		}
		if !ls.params.follow {
			return nil
		}
		// At the end of the file: truncated under us?
		if info, err := f.Stat(); err == nil && info.Size() < pos {
			pos = 0
			if werr := out.event(fileEventTruncated); werr != nil {
				return werr
			}
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
			if ls.drained(f, pos) {
				return nil
			}
		case <-time.After(ls.poll):
		}
	}
}

// drained reports whether nothing is left to read past pos.
func (ls *logStream) drained(f *os.File, pos int64) bool {
	info, err := f.Stat()
	return err != nil || info.Size() <= pos
}

// open opens the log file; with follow it waits for the file to appear
// (the task may not have started yet) until the runner is done.
func (ls *logStream) open(ctx context.Context) (*os.File, error) {
	for {
		f, err := ls.openFile()
		if err == nil || !errors.Is(err, fs.ErrNotExist) || !ls.params.follow {
			return f, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ls.done:
			return ls.openFile()
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
	file  string
}

func newLogWriter(w http.ResponseWriter, plain bool, file string) *logWriter {
	lw := &logWriter{w: w, flush: func() {}, file: file}
	if fl, ok := w.(http.Flusher); ok {
		lw.flush = fl.Flush
	}
	if !plain {
		lw.enc = json.NewEncoder(w)
	}
	return lw
}

// data writes b, read from the file up to offset end.
func (lw *logWriter) data(b []byte, end int64) error {
	var err error
	if lw.enc == nil {
		_, err = lw.w.Write(b)
	} else {
		err = lw.enc.Encode(&api.StreamFrame{Data: b, File: lw.file, Offset: end})
	}
	lw.flush()
	return err
}

func (lw *logWriter) event(ev string) error {
	if lw.enc == nil {
		return nil
	}
	err := lw.enc.Encode(&api.StreamFrame{File: lw.file, FileEvent: ev})
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
