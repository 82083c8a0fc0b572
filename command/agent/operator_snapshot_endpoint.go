package agent

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"path/filepath"
	"strconv"

	"github.com/drover-project/drover/nomad/snapshot"
)

// snapshotPath is the operator snapshot endpoint.
const snapshotPath = "/v1/operator/snapshot"

// maxSnapshotBody bounds a snapshot archive sent for a restore.
const maxSnapshotBody = 4 << 30

// operatorSnapshotSave serves GET /v1/operator/snapshot: an archive of the
// whole state (from the leader unless ?stale), with its SHA-256 in the
// Digest header, as the api client checks it.
func (h *HTTPServer) operatorSnapshotSave(w http.ResponseWriter, r *http.Request) {
	fail := func(err error) {
		h.serve(w, r, func(http.ResponseWriter, *http.Request) (any, uint64, error) { return nil, 0, err })
	}
	if !staleAllowed(r) {
		if h.srv.Forward(w, r) {
			return
		}
		if err := h.srv.WaitConsistentRead(r.Context()); err != nil {
			fail(err)
			return
		}
	}
	buf, err := snapshot.NewBuffer(filepath.Join(h.agent.config.DataDir, "server"))
	if err != nil {
		fail(err)
		return
	}
	defer buf.Close()
	sum := sha256.New()
	if _, err := h.srv.SnapshotSave(aclOf(r), io.MultiWriter(buf, sum)); err != nil {
		fail(err)
		return
	}
	rd, err := buf.Reader()
	if err != nil {
		fail(err)
		return
	}
	h.setMeta(w, 0)
	w.Header().Set("Digest", "sha-256="+base64.StdEncoding.EncodeToString(sum.Sum(nil)))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(buf.Size(), 10))
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, rd); err != nil {
		h.logger.Warn("sending snapshot", "error", err)
	}
}

// operatorSnapshotRestore serves PUT /v1/operator/snapshot: the body is an
// archive from operatorSnapshotSave; the cluster's state is replaced by it.
func (h *HTTPServer) operatorSnapshotRestore(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	if err := h.srv.SnapshotRestore(aclOf(r), r.Body); err != nil { // limited to maxSnapshotBody by ServeHTTP
		return nil, 0, err
	}
	return nil, 0, nil
}
