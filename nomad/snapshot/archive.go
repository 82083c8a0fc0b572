package snapshot

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// File names inside an archive.
const (
	metaFile  = "meta.json"
	stateFile = "state.bin"
	sumsFile  = "SHA256SUMS"
)

// ErrCorrupt wraps every problem with an archive being read.
var ErrCorrupt = errors.New("snapshot archive is not valid")

// Write writes an archive of the state read from state (its whole length,
// size bytes) described by meta to w. state is copied once; the caller
// buffers it when size is not known in advance (see Buffer).
func Write(w io.Writer, meta *raft.SnapshotMeta, state io.Reader, size int64) error {
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("snapshot: encode metadata: %w", err)
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	now := time.Now()
	add := func(name string, size int64, r io.Reader) (string, error) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: now}); err != nil {
			return "", err
		}
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(tw, h), r)
		if err != nil {
			return "", err
		}
		if n != size {
			return "", fmt.Errorf("%s: wrote %d bytes, expected %d", name, n, size)
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	}
	metaSum, err := add(metaFile, int64(len(metaJSON)), bytes.NewReader(metaJSON))
	if err != nil {
		return fmt.Errorf("snapshot: write archive: %w", err)
	}
	stateSum, err := add(stateFile, size, state)
	if err != nil {
		return fmt.Errorf("snapshot: write archive: %w", err)
	}
	sums := fmt.Sprintf("%s  %s\n%s  %s\n", metaSum, metaFile, stateSum, stateFile)
	if _, err := add(sumsFile, int64(len(sums)), strings.NewReader(sums)); err != nil {
		return fmt.Errorf("snapshot: write archive: %w", err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("snapshot: write archive: %w", err)
	}
	return gz.Close()
}

// Buffer holds a snapshot's state in a temporary file.
type Buffer struct {
	f    *os.File
	size int64
}

// NewBuffer returns an empty buffer in dir ("" for the system's).
func NewBuffer(dir string) (*Buffer, error) {
	f, err := os.CreateTemp(dir, "drover-snapshot-*")
	if err != nil {
		return nil, fmt.Errorf("snapshot: temporary file: %w", err)
	}
	return &Buffer{f: f}, nil
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	n, err := b.f.Write(p)
	b.size += int64(n)
	return n, err
}

// Size is the number of bytes written.
func (b *Buffer) Size() int64 { return b.size }

// Reader rewinds the buffer and returns a reader of its content.
func (b *Buffer) Reader() (io.Reader, error) {
	if _, err := b.f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return bufio.NewReader(b.f), nil
}

// Close removes the buffer's file.
func (b *Buffer) Close() error {
	name := b.f.Name()
	err := b.f.Close()
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	return err
}

// Read reads an archive from r, copies its state into state and returns
// its metadata. Checksums are verified before Read returns; on any error
// the state written so far must be discarded.
func Read(r io.Reader, state io.Writer) (*raft.SnapshotMeta, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	tr := tar.NewReader(gz)
	var meta raft.SnapshotMeta
	got := map[string]string{}
	var sums string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		h := sha256.New()
		switch hdr.Name {
		case metaFile:
			var buf bytes.Buffer
			if _, err := io.Copy(io.MultiWriter(&buf, h), tr); err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, metaFile, err)
			}
			if err := json.Unmarshal(buf.Bytes(), &meta); err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, metaFile, err)
			}
		case stateFile:
			if _, err := io.Copy(io.MultiWriter(state, h), tr); err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, stateFile, err)
			}
		case sumsFile:
			b, err := io.ReadAll(io.LimitReader(tr, 4096))
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, sumsFile, err)
			}
			sums = string(b)
			continue
		default:
			return nil, fmt.Errorf("%w: unexpected file %q", ErrCorrupt, hdr.Name)
		}
		got[hdr.Name] = hex.EncodeToString(h.Sum(nil))
	}
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(sums), "\n") {
		if sum, name, ok := strings.Cut(line, "  "); ok {
			want[name] = sum
		}
	}
	for _, name := range []string{metaFile, stateFile} {
		if got[name] == "" {
			return nil, fmt.Errorf("%w: %s is missing", ErrCorrupt, name)
		}
		if want[name] != got[name] {
			return nil, fmt.Errorf("%w: %s checksum mismatch", ErrCorrupt, name)
		}
	}
	return &meta, nil
}
