package logrotate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Writer appends to a stream, starting a new file whenever the current one
// is full and deleting the oldest beyond the limit. It is safe for
// concurrent use; each Write is appended whole, split across files where a
// file fills up, so every file but the newest holds exactly MaxFileSize
// bytes.
type Writer struct {
	s   stream
	lim Limits

	mu    sync.Mutex
	dir   dir
	index int      // of the file being written
	f     *os.File // nil once closed
	size  int64    // of f
}

// Open opens the stream whose first file is first (<prefix>.0) for
// writing, creating its directory if needed. It continues the file with
// the highest index, or starts the next one when that file is full.
func Open(first string, lim Limits) (*Writer, error) { return OpenIn("", first, lim) }

// OpenIn is Open with the stream's directory reached from within (the
// allocation's shared dir, which its tasks may write): it must be inside
// it after symlinks.
func OpenIn(within, first string, lim Limits) (*Writer, error) {
	s, err := streamOf(first)
	if err != nil {
		return nil, err
	}
	d, err := s.openDir(within, true)
	if err != nil {
		return nil, err
	}
	w := &Writer{s: s, lim: lim, dir: d}
	files, err := s.list(d)
	if err == nil {
		if n := len(files); n > 0 {
			w.index = files[n-1].Index
		}
		err = w.open(w.index, false)
	}
	if err == nil && w.full() {
		err = w.rotate()
	} else if err == nil {
		err = w.purge()
	}
	if err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// Write appends p to the stream. An error leaves the Writer usable: the
// next Write tries again (to start the next file, say).
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return 0, fmt.Errorf("logrotate: %w", os.ErrClosed)
	}
	written := 0
	for len(p) > 0 {
		if w.full() {
			if err := w.rotate(); err != nil {
				return written, err
			}
		}
		chunk := p
		if w.lim.MaxFileSize > 0 {
			if room := w.lim.MaxFileSize - w.size; int64(len(chunk)) > room {
				chunk = chunk[:room]
			}
		}
		n, err := w.f.Write(chunk)
		written += n
		w.size += int64(n)
		p = p[n:]
		if err != nil {
			return written, fmt.Errorf("logrotate: writing %s: %w", w.s.name(w.index), err)
		}
	}
	return written, nil
}

// Close closes the current file; the stream's files stay.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var err error
	if w.f != nil {
		err = w.f.Close()
		w.f = nil
	}
	w.dir.close()
	w.dir = dir{}
	return err
}

func (w *Writer) full() bool { return w.lim.MaxFileSize > 0 && w.size >= w.lim.MaxFileSize }

// open makes the file of index the current one, appending to what it
// holds. A symlink there is followed if it stays inside the root and
// refused otherwise; a fresh file (one the stream starts) replaces
// whatever a task planted at its name instead.
func (w *Writer) open(index int, fresh bool) error {
	name := w.s.name(index)
	path := w.dir.path(name)
	if fresh {
		if info, err := w.dir.root.Lstat(path); err == nil && !info.Mode().IsRegular() {
			if err := w.dir.root.Remove(path); err != nil {
				return fmt.Errorf("logrotate: replacing %s (%s): %w", name, info.Mode().Type(), err)
			}
		}
	} else {
		target, err := w.dir.follow(path)
		if err != nil {
			return err
		}
		if target != path { // a symlink inside: its directory may be missing
			if err := w.dir.root.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return fmt.Errorf("logrotate: %w", err)
			}
			path = target
		}
	}
	f, err := w.dir.root.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("logrotate: opening %s: %w", filepath.Join(w.dir.root.Name(), path), err)
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", name)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("logrotate: %w", err)
	}
	if w.f != nil {
		_ = w.f.Close()
	}
	w.f, w.index, w.size = f, index, info.Size()
	return nil
}

// rotate starts the file after the current one and deletes those beyond
// the limit.
func (w *Writer) rotate() error {
	if err := w.open(w.index+1, true); err != nil {
		return err
	}
	return w.purge()
}

// purge deletes the files older than the newest MaxFiles.
func (w *Writer) purge() error {
	if w.lim.MaxFiles <= 0 {
		return nil
	}
	files, err := w.s.list(w.dir)
	if err != nil {
		return err
	}
	for _, f := range files {
		if f.Index > w.index-w.lim.MaxFiles {
			break
		}
		if err := w.dir.root.Remove(w.dir.path(f.Name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("logrotate: deleting %s: %w", f.Name, err)
		}
	}
	return nil
}
