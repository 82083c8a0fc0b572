package client

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/acl"
)

// The allocation file system endpoints (`alloc fs`): ls, stat, cat,
// readat and stream of paths inside an allocation's directory (alloc/,
// and one directory per task). Paths are resolved with os.Root, so no
// path, symlink or ".." reaches outside the allocation's directory.

// allocRoot opens the directory of the allocation in the request's
// {alloc} and returns it with the request's path, relative to it.
func (c *Client) allocRoot(r *http.Request) (*os.Root, string, error) {
	id := r.PathValue("alloc")
	if _, err := c.allocRunner(r, id, acl.NamespaceCapabilityReadFS); err != nil {
		return nil, "", err
	}
	root, err := os.OpenRoot(filepath.Join(c.cfg.AllocDir(), id))
	if err != nil {
		return nil, "", notFound("allocation directory of %q: %v", id, err)
	}
	p := strings.TrimPrefix(path.Clean("/"+r.URL.Query().Get("path")), "/")
	if p == "" {
		p = "."
	}
	return root, p, nil
}

// fsError maps a file system error to a status: not found 404, an escape
// or a bad path 400.
func fsError(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return notFound("file %q not found", p)
	case err != nil && strings.Contains(err.Error(), "escapes"):
		return badRequest("path %q escapes the allocation directory", p)
	case err != nil:
		return badRequest("path %q: %v", p, err)
	}
	return nil
}

// fileInfo describes fi; contentType is sniffed from the first bytes of a
// regular file opened from root at p.
func fileInfo(root *os.Root, p string, fi fs.FileInfo) *api.AllocFileInfo {
	out := &api.AllocFileInfo{Name: fi.Name(), IsDir: fi.IsDir(), Size: fi.Size(),
		FileMode: fi.Mode().String(), ModTime: fi.ModTime()}
	if fi.Mode().IsRegular() {
		if f, err := root.Open(p); err == nil {
			buf := make([]byte, 512)
			n, _ := io.ReadFull(f, buf)
			f.Close()
			out.ContentType = http.DetectContentType(buf[:n])
		}
	}
	return out
}

// handleFSList serves GET /v1/client/fs/ls/{alloc}?path=.
func (c *Client) handleFSList(w http.ResponseWriter, r *http.Request) {
	root, p, err := c.allocRoot(r)
	if err != nil {
		writeError(w, err)
		return
	}
	defer root.Close()
	dir, err := root.Open(p)
	if err != nil {
		writeError(w, fsError(p, err))
		return
	}
	defer dir.Close()
	entries, err := dir.ReadDir(-1)
	if err != nil {
		writeError(w, badRequest("path %q is not a directory", p))
		return
	}
	out := make([]*api.AllocFileInfo, 0, len(entries))
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, fileInfo(root, path.Join(p, e.Name()), fi))
	}
	writeJSON(w, out)
}

// handleFSStat serves GET /v1/client/fs/stat/{alloc}?path=.
func (c *Client) handleFSStat(w http.ResponseWriter, r *http.Request) {
	root, p, err := c.allocRoot(r)
	if err != nil {
		writeError(w, err)
		return
	}
	defer root.Close()
	fi, err := root.Stat(p)
	if err != nil {
		writeError(w, fsError(p, err))
		return
	}
	writeJSON(w, fileInfo(root, p, fi))
}

// openRegular opens the regular file p of root.
func openRegular(root *os.Root, p string) (*os.File, error) {
	f, err := root.Open(p)
	if err != nil {
		return nil, fsError(p, err)
	}
	fi, err := f.Stat()
	if err == nil && fi.IsDir() {
		err = badRequest("file %q is a directory", p)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// handleFSCat serves GET /v1/client/fs/cat/{alloc}?path=: the whole file.
func (c *Client) handleFSCat(w http.ResponseWriter, r *http.Request) {
	root, p, err := c.allocRoot(r)
	if err != nil {
		writeError(w, err)
		return
	}
	defer root.Close()
	f, err := openRegular(root, p)
	if err != nil {
		writeError(w, err)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.Copy(w, f)
}

// handleFSReadAt serves GET /v1/client/fs/readat/{alloc}?path=&offset=&limit=:
// at most limit bytes (all when 0) from offset.
func (c *Client) handleFSReadAt(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var offset, limit int64
	for name, dst := range map[string]*int64{"offset": &offset, "limit": &limit} {
		if v := q.Get(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				writeError(w, badRequest("%s must be a non-negative integer, got %q", name, v))
				return
			}
			*dst = n
		}
	}
	root, p, err := c.allocRoot(r)
	if err != nil {
		writeError(w, err)
		return
	}
	defer root.Close()
	f, err := openRegular(root, p)
	if err != nil {
		writeError(w, err)
		return
	}
	defer f.Close()
	var rd io.Reader = io.NewSectionReader(f, offset, 1<<62)
	if limit > 0 {
		rd = io.LimitReader(rd, limit)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.Copy(w, rd)
}

// handleFSStream serves GET /v1/client/fs/stream/{alloc}?path=&offset=&origin=&plain=:
// the file from the offset, then what is appended to it, in frames (or
// raw with plain=true), until the caller goes away or the allocation is
// done and the file drained.
func (c *Client) handleFSStream(w http.ResponseWriter, r *http.Request) {
	p, err := parseLogParams(r, "-")
	if err != nil {
		writeError(w, err)
		return
	}
	if v := r.URL.Query().Get("follow"); v == "" {
		p.follow = true // a stream follows unless told not to
	}
	root, rel, err := c.allocRoot(r)
	if err != nil {
		writeError(w, err)
		return
	}
	defer root.Close()
	f, err := openRegular(root, rel)
	if err != nil {
		writeError(w, err)
		return
	}
	f.Close()
	ar, _ := c.allocRunner(r, r.PathValue("alloc"), acl.NamespaceCapabilityReadFS)
	ls := &logStream{
		src: &fileSource{
			path: rel, params: p,
			open: func() (*os.File, error) { return root.Open(rel) },
		},
		frameName: func(string) string { return rel },
		params:    p,
		done:      ar.WaitCh(), poll: c.cfg.timing.logPoll, heartbeat: c.cfg.timing.logHeartbeat,
	}
	if err := ls.serve(r.Context(), w); err != nil {
		c.logger.Debug("file stream ended", "alloc_id", r.PathValue("alloc"), "path", rel, "error", err)
	}
}
