package logrotate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// MB is the unit of Nomad's logs.max_file_size.
const MB = 1 << 20

// Limits bound the files of one stream.
type Limits struct {
	// MaxFiles is how many files are kept, the one being written
	// included; 0 keeps them all.
	MaxFiles int
	// MaxFileSize is the size in bytes at which a file is full and the
	// next one is started; 0 never starts another.
	MaxFileSize int64
}

// LimitsMB returns the limits of a logs block: maxFiles files of
// maxFileSizeMB MB.
func LimitsMB(maxFiles, maxFileSizeMB int) Limits {
	return Limits{MaxFiles: max(maxFiles, 0), MaxFileSize: int64(max(maxFileSizeMB, 0)) * MB}
}

// File is one file of a stream.
type File struct {
	Index int
	Name  string // base name, <prefix>.<Index>
	Size  int64
}

// stream is where a stream's files are: dir/base.<index>.
type stream struct {
	dir, base string
}

// streamOf returns the stream whose first file is first (a path ending in
// ".0").
func streamOf(first string) (stream, error) {
	dir, name := filepath.Split(first)
	base, ok := strings.CutSuffix(name, ".0")
	if !ok || base == "" {
		return stream{}, fmt.Errorf("logrotate: %q does not name the first file of a stream (<prefix>.0)", first)
	}
	if dir == "" {
		dir = "."
	}
	return stream{dir: filepath.Clean(dir), base: base}, nil
}

func (s stream) name(index int) string { return s.base + "." + strconv.Itoa(index) }

// index parses name as one of the stream's file names.
func (s stream) index(name string) (int, bool) {
	suffix, ok := strings.CutPrefix(name, s.base+".")
	if !ok || suffix == "" {
		return 0, false
	}
	i, err := strconv.Atoi(suffix)
	if err != nil || i < 0 || strconv.Itoa(i) != suffix { // no signs, no leading zeros
		return 0, false
	}
	return i, true
}

// dir is a stream's directory reached through a root: rel inside root.
// Every path is resolved by the root, which follows symlinks only inside
// it.
type dir struct {
	root *os.Root
	rel  string
}

func (d dir) path(name string) string { return filepath.Join(d.rel, name) }

func (d dir) close() {
	if d.root != nil {
		_ = d.root.Close()
	}
}

// list returns the stream's regular files in d, by increasing index.
func (s stream) list(d dir) ([]File, error) {
	f, err := d.root.Open(d.rel)
	if err != nil {
		return nil, fmt.Errorf("logrotate: opening %s: %w", s.dir, err)
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("logrotate: listing %s: %w", s.dir, err)
	}
	var files []File
	for _, e := range entries {
		i, ok := s.index(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("logrotate: %w", err)
		}
		files = append(files, File{Index: i, Name: e.Name(), Size: info.Size()})
	}
	slices.SortFunc(files, func(a, b File) int { return a.Index - b.Index })
	return files, nil
}

// openDir opens the stream's directory. With within set, the directory
// must be inside it, and it and the stream's files are reached from it:
// symlinks are followed only while they stay inside within (the
// allocation's shared dir, which its tasks may write), so a task cannot
// redirect the stream out of it. With create, missing directories are
// created.
func (s stream) openDir(within string, create bool) (dir, error) {
	if within == "" {
		within = s.dir
	}
	rel, err := filepath.Rel(within, s.dir)
	if err != nil || !filepath.IsLocal(rel) {
		return dir{}, fmt.Errorf("logrotate: %s is not inside %s", s.dir, within)
	}
	if create {
		if err := os.MkdirAll(within, 0o755); err != nil { // the caller's own path
			return dir{}, fmt.Errorf("logrotate: %w", err)
		}
	}
	root, err := os.OpenRoot(within)
	if err != nil {
		return dir{}, fmt.Errorf("logrotate: %w", err)
	}
	if create {
		if err := root.MkdirAll(rel, 0o755); err != nil {
			root.Close()
			return dir{}, fmt.Errorf("logrotate: creating %s: %w", s.dir, err)
		}
	}
	if _, err := root.Stat(rel); err != nil {
		root.Close()
		return dir{}, fmt.Errorf("logrotate: %s: %w", s.dir, err)
	}
	return dir{root: root, rel: rel}, nil
}

// follow returns what to open for the entry at path (relative to the
// root): path itself, or, when it is a symlink, its target relative to
// the root; a target outside the root is refused. (The root would refuse
// an absolute symlink even to a place inside it, which a task may well
// plant.)
func (d dir) follow(path string) (string, error) {
	target, err := d.root.Readlink(path)
	if err != nil {
		return path, nil // not a symlink (or nothing there yet)
	}
	abs := target
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(d.root.Name(), filepath.Dir(path), target)
	}
	rel, err := filepath.Rel(d.root.Name(), abs)
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("logrotate: %s resolves outside %s (to %s)", filepath.Join(d.root.Name(), path), d.root.Name(), target)
	}
	return rel, nil
}

// List returns the files of the stream whose first file is first, by
// increasing index; none when the directory does not exist.
func List(first string) ([]File, error) {
	s, err := streamOf(first)
	if err != nil {
		return nil, err
	}
	d, err := s.openDir("", false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer d.close()
	return s.list(d)
}

// Position is a place in a stream: an offset in the file of an index.
type Position struct {
	Index  int
	Offset int64
}

// Seek returns where reading starts in files (as List returns them):
// offset bytes after the start of the oldest file, or, fromEnd, offset
// bytes before the end of the newest, clamped to what the files hold. With
// no files it is the start of index 0.
func Seek(files []File, fromEnd bool, offset int64) Position {
	if len(files) == 0 {
		return Position{}
	}
	offset = max(offset, 0)
	if fromEnd {
		for i := len(files) - 1; i >= 0; i-- {
			if offset <= files[i].Size {
				return Position{Index: files[i].Index, Offset: files[i].Size - offset}
			}
			offset -= files[i].Size
		}
		return Position{Index: files[0].Index}
	}
	for _, f := range files {
		if offset < f.Size {
			return Position{Index: f.Index, Offset: offset}
		}
		offset -= f.Size
	}
	last := files[len(files)-1]
	return Position{Index: last.Index, Offset: last.Size}
}
