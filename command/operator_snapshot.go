package command

import (
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/nomad/api"
)

const snapshotSaveHelp = `Usage: drover operator snapshot save [options] <file>

  Saves an archive of the cluster's whole state (jobs and their versions,
  deployments, allocations, evaluations, nodes, keys, configuration) to
  <file>, checking the server's checksum.

Options:

  -stale  Let any server answer (possibly behind the leader).
`

const snapshotRestoreHelp = `Usage: drover operator snapshot restore [options] <file>

  Replaces the cluster's state with the archive in <file>, saved with
  "operator snapshot save" (on this cluster or another one).
`

// snapshotSave implements `drover operator snapshot save`.
func snapshotSave(m *Meta, args []string) int {
	fs := m.FlagSet("operator snapshot save")
	var stale bool
	fs.BoolVar(&stale, "stale", false, "")
	if code, ok := m.parse(fs, args, snapshotSaveHelp); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return m.usageError("This command takes one argument: <file>", snapshotSaveHelp)
	}
	path := fs.Arg(0)
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	rc, err := c.Operator().Snapshot(&api.QueryOptions{AllowStale: stale})
	if err != nil {
		m.errorf("Failed to get snapshot file: %s", err)
		return 1
	}
	defer rc.Close()
	// Written next to the destination, renamed once complete and checked.
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		m.errorf("Failed to create snapshot file: %s", err)
		return 1
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, rc); err != nil {
		_ = tmp.Close()
		m.errorf("Failed to write snapshot file: %s", err)
		return 1
	}
	if err := tmp.Close(); err != nil {
		m.errorf("Failed to write snapshot file: %s", err)
		return 1
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		m.errorf("Failed to move snapshot file into place: %s", err)
		return 1
	}
	m.outf("State file written to %s\n", path)
	return 0
}

// snapshotRestore implements `drover operator snapshot restore`.
func snapshotRestore(m *Meta, args []string) int {
	fs := m.FlagSet("operator snapshot restore")
	if code, ok := m.parse(fs, args, snapshotRestoreHelp); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return m.usageError("This command takes one argument: <file>", snapshotRestoreHelp)
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		m.errorf("Error opening snapshot file: %s", err)
		return 1
	}
	defer f.Close()
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	if _, err := c.Operator().SnapshotRestore(f, nil); err != nil {
		m.errorf("Error restoring snapshot: %s", err)
		return 1
	}
	m.outf("Snapshot Restored\n")
	return 0
}
