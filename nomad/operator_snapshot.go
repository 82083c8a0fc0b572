package nomad

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/snapshot"
	"github.com/drover-project/drover/nomad/structs"
)

// bufferSink is a raft.SnapshotSink writing into a snapshot.Buffer.
type bufferSink struct {
	*snapshot.Buffer
}

func (bufferSink) ID() string    { return "operator" }
func (bufferSink) Cancel() error { return nil }

// Close is called by Persist when the state is written; the buffer stays
// readable until SnapshotSave removes it.
func (bufferSink) Close() error { return nil }

// SnapshotSave writes an archive of the whole state (every table: jobs and
// their versions, deployments, allocations, evaluations, nodes, keys, the
// scheduler configuration, node pools) as this server has applied it, and
// returns the archive's size. Call it on the leader for a consistent copy.
func (s *Server) SnapshotSave(caller *acl.ACL, w io.Writer) (int64, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return 0, err
	}
	snap, err := s.fsm.Snapshot()
	if err != nil {
		return 0, err
	}
	defer snap.Release()
	buf, err := snapshot.NewBuffer(s.snapshotTempDir())
	if err != nil {
		return 0, err
	}
	defer buf.Close()
	if err := snap.Persist(bufferSink{buf}); err != nil {
		return 0, fmt.Errorf("snapshot: persist state: %w", err)
	}
	meta := &raft.SnapshotMeta{
		Version: raft.SnapshotVersionMax, ID: "operator", Index: s.State().LatestIndex(),
		Term: s.cluster.Raft().CurrentTerm(), Configuration: s.cluster.Raft().GetConfiguration().Configuration(),
		Size: buf.Size(),
	}
	r, err := buf.Reader()
	if err != nil {
		return 0, err
	}
	cw := &countingWriter{w: w}
	err = snapshot.Write(cw, meta, r, buf.Size())
	return cw.n, err
}

// SnapshotRestore replaces the cluster's state with the archive read from
// r, through raft (every server installs it), then restarts the leader's
// duties on the restored state. It must run on the leader. A corrupt
// archive is a *structs.RequestError and changes nothing.
func (s *Server) SnapshotRestore(caller *acl.ACL, r io.Reader) error {
	if err := permit(caller.IsManagement()); err != nil {
		return err
	}
	buf, err := snapshot.NewBuffer(s.snapshotTempDir())
	if err != nil {
		return err
	}
	defer buf.Close()
	meta, err := snapshot.Read(r, buf)
	if err != nil {
		return &structs.RequestError{Kind: structs.ErrBadRequest, Msg: err.Error()}
	}
	state, err := buf.Reader()
	if err != nil {
		return err
	}
	if err := s.cluster.Raft().Restore(meta, state, 0); err != nil {
		return fmt.Errorf("snapshot restore: %w", err)
	}
	s.logger.Info("state restored from a snapshot", "snapshot_index", meta.Index)
	// The broker, heartbeats and watchers hold the old state: start over.
	s.revokeLeadership()
	if s.IsLeader() {
		s.establishLeadership()
	}
	return nil
}

func (s *Server) snapshotTempDir() string { return filepath.Join(s.config.DataDir, "server") }

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
