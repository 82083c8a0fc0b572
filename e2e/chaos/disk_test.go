package chaos

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/drover-project/drover/e2e/internal/agentproc"
)

// TestKeepData: a failed run's copy holds each server's data directory
// (subdirectories too) and log, and not the disk-full filler.
func TestKeepData(t *testing.T) {
	src := t.TempDir()
	data := filepath.Join(src, "data")
	files := map[string]string{"raft/raft.db": "log", "raft/snapshots/1-2/state.bin": "snap", "server/keyring": "k"}
	for rel, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(data, rel)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, rel), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(data, fillerName), []byte("filler"), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(src, "agent.log")
	if err := os.WriteFile(logPath, []byte("a line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Servers: []*Server{{Proc: &agentproc.Proc{Name: "s0", DataDir: data, LogPath: logPath}}}}
	dst := t.TempDir()
	if err := c.KeepData(dst); err != nil {
		t.Fatal(err)
	}
	for rel, body := range files {
		got, err := os.ReadFile(filepath.Join(dst, "s0", rel))
		if err != nil || string(got) != body {
			t.Errorf("%s: %q (%v), want %q", rel, got, err, body)
		}
	}
	if _, err := os.Stat(filepath.Join(dst, "s0", fillerName)); !os.IsNotExist(err) {
		t.Errorf("the filler was copied (stat: %v)", err)
	}
	if got, err := os.ReadFile(filepath.Join(dst, "s0.log")); err != nil || string(got) != "a line\n" {
		t.Errorf("log: %q (%v)", got, err)
	}
	if use := c.DiskUse(); use == "" || c.maxDisk["s0"] <= 0 {
		t.Errorf("DiskUse %q recorded %d bytes for s0", use, c.maxDisk["s0"])
	}
}
