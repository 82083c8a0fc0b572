package logrotate

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrTruncated is returned by Reader.Read when the file being read became
// shorter than what was read of it: reading starts again at its beginning.
var ErrTruncated = errors.New("logrotate: file truncated")

// Reader reads a stream from a position to its end, across its files. It
// is not safe for concurrent use.
type Reader struct {
	s      stream
	within string // see NewReaderIn
	dir    dir    // root nil until the directory exists
	start  func([]File) Position
	index  int      // of the file being read
	offset int64    // next byte to read in it
	f      *os.File // nil until that file is open
}

// NewReader returns a reader of the stream whose first file is first,
// starting offset bytes after the start of its oldest file or, fromEnd,
// offset bytes before the end of its newest. The position is taken from
// the files there are at the first Read that finds some.
func NewReader(first string, fromEnd bool, offset int64) (*Reader, error) {
	return NewReaderIn("", first, fromEnd, offset)
}

// NewReaderIn is NewReader with the stream's directory reached from within
// (see OpenIn).
func NewReaderIn(within, first string, fromEnd bool, offset int64) (*Reader, error) {
	s, err := streamOf(first)
	if err != nil {
		return nil, err
	}
	return &Reader{s: s, within: within, start: func(files []File) Position { return Seek(files, fromEnd, offset) }}, nil
}

// Read reads from the file being read, moving on to the next file once
// this one is read to its end and a newer one exists. It returns io.EOF at
// the end of the newest file (more may come: read again later) and
// ErrTruncated when the file shrank under it.
func (r *Reader) Read(p []byte) (int, error) {
	for {
		if r.f == nil {
			ok, err := r.openCurrent()
			if err != nil {
				return 0, err
			}
			if !ok {
				return 0, io.EOF
			}
		}
		n, err := r.f.ReadAt(p, r.offset)
		if n > 0 {
			r.offset += int64(n)
			return n, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("logrotate: reading %s: %w", r.Name(), err)
		}
		next, ok, err := r.after(r.index)
		if err != nil {
			return 0, err
		}
		if !ok {
			if info, err := r.f.Stat(); err == nil && info.Size() < r.offset {
				r.offset = 0
				return 0, ErrTruncated
			}
			return 0, io.EOF
		}
		// A newer file exists, so this one is complete: read what was
		// written to it since the read above, then move on.
		if n, _ := r.f.ReadAt(p, r.offset); n > 0 {
			r.offset += int64(n)
			return n, nil
		}
		_ = r.f.Close()
		r.f, r.index, r.offset = nil, next, 0
	}
}

// Name is the base name of the file the last Read read from.
func (r *Reader) Name() string { return r.s.name(r.index) }

// Path is the path of the file the last Read read from.
func (r *Reader) Path() string { return filepath.Join(r.s.dir, r.Name()) }

// Offset is the offset in that file after the last Read.
func (r *Reader) Offset() int64 { return r.offset }

// Close releases the open file and directory.
func (r *Reader) Close() error {
	if r.f != nil {
		_ = r.f.Close()
		r.f = nil
	}
	r.dir.close()
	r.dir = dir{}
	return nil
}

// openCurrent opens the file to read: the one of the start position at
// first, later the oldest from the current index on (files older than the
// reader are deleted under a slow one). ok is false when there is none yet.
func (r *Reader) openCurrent() (ok bool, err error) {
	if r.dir.root == nil {
		d, err := r.s.openDir(r.within, false)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		r.dir = d
	}
	files, err := r.s.list(r.dir)
	if err != nil || len(files) == 0 {
		return false, err
	}
	if r.start != nil {
		pos := r.start(files)
		r.start = nil
		r.index, r.offset = pos.Index, pos.Offset
	}
	for _, f := range files {
		if f.Index < r.index {
			continue
		}
		if f.Index > r.index {
			r.index, r.offset = f.Index, 0
		}
		file, err := r.dir.root.Open(r.dir.path(f.Name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted since the listing
		}
		if err != nil {
			return false, fmt.Errorf("logrotate: opening %s: %w", f.Name, err)
		}
		r.f = file
		return true, nil
	}
	return false, nil
}

// after returns the lowest index after index among the stream's files.
func (r *Reader) after(index int) (int, bool, error) {
	files, err := r.s.list(r.dir)
	if err != nil {
		return 0, false, err
	}
	for _, f := range files {
		if f.Index > index {
			return f.Index, true, nil
		}
	}
	return 0, false, nil
}
