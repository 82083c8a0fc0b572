package logrotate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pattern returns n bytes that differ from one offset to the next, so a
// misplaced or lost chunk shows.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%23)
	}
	return b
}

// onDisk maps each of the stream's file names to its content.
func onDisk(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	got := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		got[e.Name()] = string(b)
	}
	return got
}

// writeChunks writes data through w in chunks of random sizes up to max.
func writeChunks(t *testing.T, w io.Writer, data []byte, maxChunk int, rng *rand.Rand) {
	t.Helper()
	for len(data) > 0 {
		n := min(len(data), 1+rng.IntN(maxChunk))
		m, err := w.Write(data[:n])
		require.NoError(t, err)
		require.Equal(t, n, m)
		data = data[n:]
	}
}

func TestWriterRotatesAtMaxFileSize(t *testing.T) {
	for _, maxChunk := range []int{1, 3, 10, 11, 100} {
		t.Run(fmt.Sprint("chunks up to ", maxChunk), func(t *testing.T) {
			dir := t.TempDir()
			w, err := Open(filepath.Join(dir, "web.stdout.0"), Limits{MaxFiles: 5, MaxFileSize: 10})
			require.NoError(t, err)
			data := pattern(25)
			writeChunks(t, w, data, maxChunk, rand.New(rand.NewPCG(1, uint64(maxChunk))))
			require.NoError(t, w.Close())
			require.Equal(t, map[string]string{
				"web.stdout.0": string(data[:10]),
				"web.stdout.1": string(data[10:20]),
				"web.stdout.2": string(data[20:]),
			}, onDisk(t, dir))
		})
	}
}

func TestWriterKeepsAtMostMaxFiles(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(filepath.Join(dir, "web.stderr.0"), Limits{MaxFiles: 2, MaxFileSize: 10})
	require.NoError(t, err)
	data := pattern(45)
	_, err = w.Write(data)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.Equal(t, map[string]string{
		"web.stderr.3": string(data[30:40]),
		"web.stderr.4": string(data[40:]),
	}, onDisk(t, dir))
}

func TestWriterWithoutLimitsKeepsOneFile(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(filepath.Join(dir, "web.stdout.0"), Limits{})
	require.NoError(t, err)
	data := pattern(3000)
	writeChunks(t, w, data, 500, rand.New(rand.NewPCG(2, 2)))
	require.NoError(t, w.Close())
	require.Equal(t, map[string]string{"web.stdout.0": string(data)}, onDisk(t, dir))
}

func TestOpenContinuesTheHighestIndex(t *testing.T) {
	tests := []struct {
		name     string
		existing map[string]string
		write    string
		want     map[string]string
	}{
		{
			name:     "room left in the newest file",
			existing: map[string]string{"t.stdout.0": "0123456789", "t.stdout.1": "abcd"},
			write:    "efghijkl",
			want:     map[string]string{"t.stdout.0": "0123456789", "t.stdout.1": "abcdefghij", "t.stdout.2": "kl"},
		},
		{
			name:     "newest file full",
			existing: map[string]string{"t.stdout.0": "0123456789"},
			write:    "x",
			want:     map[string]string{"t.stdout.0": "0123456789", "t.stdout.1": "x"},
		},
		{
			name:     "older files already deleted",
			existing: map[string]string{"t.stdout.7": "abc"},
			write:    "d",
			want:     map[string]string{"t.stdout.7": "abcd"},
		},
		{
			name:     "more files than the limit: the oldest go",
			existing: map[string]string{"t.stdout.0": "0123456789", "t.stdout.1": "0123456789", "t.stdout.2": "0123456789", "t.stdout.3": "01"},
			write:    "2",
			want:     map[string]string{"t.stdout.1": "0123456789", "t.stdout.2": "0123456789", "t.stdout.3": "012"},
		},
		{
			name:     "other streams untouched",
			existing: map[string]string{"t.stderr.0": "e", "t.stdout.00": "x", "t.stdout.-1": "y", "u.stdout.0": "z"},
			write:    "o",
			want:     map[string]string{"t.stderr.0": "e", "t.stdout.00": "x", "t.stdout.-1": "y", "u.stdout.0": "z", "t.stdout.0": "o"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.existing {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
			}
			w, err := Open(filepath.Join(dir, "t.stdout.0"), Limits{MaxFiles: 3, MaxFileSize: 10})
			require.NoError(t, err)
			_, err = w.Write([]byte(tt.write))
			require.NoError(t, err)
			require.NoError(t, w.Close())
			require.Equal(t, tt.want, onDisk(t, dir))
		})
	}
}

func TestWriterReplacesAPlantedSymlinkInsteadOfFollowingIt(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "host-file")
	require.NoError(t, os.WriteFile(target, []byte("host"), 0o644))
	require.NoError(t, os.Symlink(target, filepath.Join(dir, "t.stdout.1")))
	w, err := Open(filepath.Join(dir, "t.stdout.0"), Limits{MaxFiles: 3, MaxFileSize: 4})
	require.NoError(t, err)
	_, err = w.Write([]byte("abcdef"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, "host", string(b))
	require.Equal(t, map[string]string{"t.stdout.0": "abcd", "t.stdout.1": "ef"}, onDisk(t, dir))
	info, err := os.Lstat(filepath.Join(dir, "t.stdout.1"))
	require.NoError(t, err)
	require.True(t, info.Mode().IsRegular())
}

func TestWriteAfterClose(t *testing.T) {
	w, err := Open(filepath.Join(t.TempDir(), "t.stdout.0"), Limits{})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	_, err = w.Write([]byte("x"))
	require.ErrorIs(t, err, os.ErrClosed)
}

func TestOpenRefusesAPathThatIsNotAFirstFile(t *testing.T) {
	for _, p := range []string{"/tmp/web.stdout", "/tmp/web.stdout.1", "/tmp/.0"} {
		_, err := Open(p, Limits{})
		require.Error(t, err, p)
	}
}

func TestSeek(t *testing.T) {
	files := []File{{Index: 2, Size: 10}, {Index: 3, Size: 10}, {Index: 4, Size: 5}}
	tests := []struct {
		name    string
		files   []File
		fromEnd bool
		offset  int64
		want    Position
	}{
		{"no files", nil, false, 7, Position{}},
		{"no files from the end", nil, true, 7, Position{}},
		{"start", files, false, 0, Position{2, 0}},
		{"inside the oldest", files, false, 9, Position{2, 9}},
		{"at a file boundary", files, false, 10, Position{3, 0}},
		{"inside the newest", files, false, 22, Position{4, 2}},
		{"past everything", files, false, 99, Position{4, 5}},
		{"end", files, true, 0, Position{4, 5}},
		{"inside the newest from the end", files, true, 3, Position{4, 2}},
		{"the whole newest", files, true, 5, Position{4, 0}},
		{"back into an older file", files, true, 6, Position{3, 9}},
		{"before everything", files, true, 99, Position{2, 0}},
		{"negative offset", files, false, -4, Position{2, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Seek(tt.files, tt.fromEnd, tt.offset))
		})
	}
}

func TestListOrdersByIndexAndSkipsForeignFiles(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"t.stdout.10": "ten", "t.stdout.9": "nine!", "t.stdout.x": "", "t.stdout.01": "", "t.stdout": ""} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	require.NoError(t, os.Symlink(filepath.Join(dir, "t.stdout.9"), filepath.Join(dir, "t.stdout.11")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "t.stdout.12"), 0o755))
	files, err := List(filepath.Join(dir, "t.stdout.0"))
	require.NoError(t, err)
	require.Equal(t, []File{{Index: 9, Name: "t.stdout.9", Size: 5}, {Index: 10, Name: "t.stdout.10", Size: 3}}, files)

	files, err = List(filepath.Join(dir, "missing", "t.stdout.0"))
	require.NoError(t, err)
	require.Empty(t, files)
}

// readAvailable reads r until io.EOF.
func readAvailable(t *testing.T, r *Reader) string {
	t.Helper()
	var out bytes.Buffer
	buf := make([]byte, 7)
	for {
		n, err := r.Read(buf)
		out.Write(buf[:n])
		if errors.Is(err, io.EOF) {
			return out.String()
		}
		require.NoError(t, err)
	}
}

func TestReaderReadsAcrossFilesFromAPosition(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "t.stdout.0")
	w, err := Open(first, Limits{MaxFiles: 3, MaxFileSize: 10})
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	data := pattern(47) // files 2, 3, 4 hold data[20:47]
	_, err = w.Write(data)
	require.NoError(t, err)

	tests := []struct {
		fromEnd bool
		offset  int64
		want    []byte
	}{
		{false, 0, data[20:]},
		{false, 12, data[32:]},
		{true, 0, nil},
		{true, 9, data[38:]},
		{true, 100, data[20:]},
	}
	for _, tt := range tests {
		r, err := NewReader(first, tt.fromEnd, tt.offset)
		require.NoError(t, err)
		require.Equal(t, string(tt.want), readAvailable(t, r), "fromEnd %v offset %d", tt.fromEnd, tt.offset)
		require.Equal(t, "t.stdout.4", r.Name())
		require.Equal(t, int64(7), r.Offset())
		require.NoError(t, r.Close())
	}
}

func TestReaderBeforeAnyFileWaitsForTheFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs") // not created yet
	first := filepath.Join(dir, "t.stdout.0")
	r, err := NewReader(first, true, 0)
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, "", readAvailable(t, r))
	w, err := Open(first, Limits{MaxFiles: 2, MaxFileSize: 4})
	require.NoError(t, err)
	defer w.Close()
	_, err = w.Write([]byte("hello"))
	require.NoError(t, err)
	// The position is taken when the files appear: the end then is after
	// what was written, so a follower from the end sees what comes next.
	require.Equal(t, "", readAvailable(t, r))
	_, err = w.Write([]byte(" world"))
	require.NoError(t, err)
	require.Equal(t, " world", readAvailable(t, r))
}

func TestReaderOutrunByDeletionMovesToTheOldestKept(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "t.stdout.0")
	w, err := Open(first, Limits{MaxFiles: 2, MaxFileSize: 4})
	require.NoError(t, err)
	defer w.Close()
	_, err = w.Write([]byte("abcd"))
	require.NoError(t, err)
	r, err := NewReader(first, false, 0)
	require.NoError(t, err)
	defer r.Close()
	buf := make([]byte, 2)
	n, err := r.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "ab", string(buf[:n]))
	// .0 and .1 are deleted while the reader is in .0 (it keeps .0 open).
	_, err = w.Write([]byte("efghijklmn"))
	require.NoError(t, err)
	require.Equal(t, "cdijklmn", readAvailable(t, r))
}

func TestReaderReportsTruncation(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "t.stdout.0")
	require.NoError(t, os.WriteFile(first, []byte("before"), 0o644))
	r, err := NewReader(first, false, 0)
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, "before", readAvailable(t, r))
	require.NoError(t, os.WriteFile(first, []byte("new"), 0o644))
	_, err = r.Read(make([]byte, 10))
	require.ErrorIs(t, err, ErrTruncated)
	require.Equal(t, "new", readAvailable(t, r))
}

// A reader following a stream while it is written, rotated and (with all
// files kept) never deleted under it reads exactly what was written.
func TestReaderFollowsAConcurrentWriterAcrossRotations(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "t.stdout.0")
	w, err := Open(first, Limits{MaxFileSize: 1000})
	require.NoError(t, err)
	data := pattern(50_000)
	progress := make(chan struct{}, 1)
	writerDone := make(chan error, 1)
	go func() {
		rng := rand.New(rand.NewPCG(7, 7))
		rest := data
		for len(rest) > 0 {
			n := min(len(rest), 1+rng.IntN(1500))
			if _, err := w.Write(rest[:n]); err != nil {
				writerDone <- err
				close(progress)
				return
			}
			rest = rest[n:]
			select {
			case progress <- struct{}{}:
			default:
			}
		}
		writerDone <- w.Close()
		close(progress)
	}()

	r, err := NewReader(first, false, 0)
	require.NoError(t, err)
	defer r.Close()
	var got bytes.Buffer
	buf := make([]byte, 333)
	files := map[string]bool{}
	for finished := false; ; {
		n, err := r.Read(buf)
		if n > 0 {
			got.Write(buf[:n])
			files[r.Name()] = true
			continue
		}
		if !errors.Is(err, io.EOF) {
			require.NoError(t, err)
		}
		if finished {
			break
		}
		if _, open := <-progress; !open {
			finished = true // one more pass drains what is left
		}
	}
	require.NoError(t, <-writerDone)
	require.Equal(t, len(data), got.Len())
	require.True(t, bytes.Equal(data, got.Bytes()), "content differs")
	require.Len(t, files, 50)
	for name := range files {
		require.True(t, strings.HasPrefix(name, "t.stdout."), name)
	}
}

func TestOpenInRefusesADirectoryRedirectedOutOfWithin(t *testing.T) {
	within, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(within, "logs")))
	first := filepath.Join(within, "logs", "t.stdout.0")
	_, err := OpenIn(within, first, Limits{})
	require.Error(t, err)
	r, err := NewReaderIn(within, first, false, 0)
	require.NoError(t, err)
	_, err = r.Read(make([]byte, 8))
	require.Error(t, err)
	require.NotErrorIs(t, err, io.EOF)
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing was written outside")

	_, err = OpenIn(within, filepath.Join(outside, "t.stdout.0"), Limits{})
	require.ErrorContains(t, err, "is not inside")
}

func TestOpenInCreatesTheDirectoryAndFollowsSymlinksInside(t *testing.T) {
	within := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(within, "real"), 0o755))
	require.NoError(t, os.Symlink("real", filepath.Join(within, "logs")))
	w, err := OpenIn(within, filepath.Join(within, "logs", "t.stdout.0"), Limits{})
	require.NoError(t, err)
	_, err = w.Write([]byte("x"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.Equal(t, map[string]string{"t.stdout.0": "x"}, onDisk(t, filepath.Join(within, "real")))

	w, err = OpenIn(within, filepath.Join(within, "new", "dir", "t.stdout.0"), Limits{})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.FileExists(t, filepath.Join(within, "new", "dir", "t.stdout.0"))
}

func TestOpenFollowsASymlinkAtTheCurrentFileOnlyInsideWithin(t *testing.T) {
	within, outside := t.TempDir(), t.TempDir()
	logs := filepath.Join(within, "logs")
	require.NoError(t, os.Mkdir(logs, 0o755))
	first := filepath.Join(logs, "t.stdout.0")
	victim := filepath.Join(outside, "victim")
	require.NoError(t, os.Symlink(victim, first))
	_, err := OpenIn(within, first, Limits{})
	require.ErrorContains(t, err, first)
	require.ErrorContains(t, err, "resolves outside")
	require.NoFileExists(t, victim)

	require.NoError(t, os.Remove(first))
	inside := filepath.Join(within, "data-out")
	require.NoError(t, os.Symlink(inside, first))
	w, err := OpenIn(within, first, Limits{})
	require.NoError(t, err)
	_, err = w.Write([]byte("written\n"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	b, err := os.ReadFile(inside)
	require.NoError(t, err)
	require.Equal(t, "written\n", string(b))
}
