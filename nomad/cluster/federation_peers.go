package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/drover-project/drover/nomad/cluster/wan"
)

// wanPeersFile, under the raft directory, keeps the rpc addresses of the
// servers of other regions this server knows, so that a server restarted
// at the same time as every server it federated with finds them again:
// they are its seeds until it reaches them.
const wanPeersFile = "wan-peers.json"

func (c *Cluster) wanPeersPath() string {
	return filepath.Join(c.cfg.DataDir, raftDirName, wanPeersFile)
}

// loadWANPeers returns the addresses saved by a previous run (none when
// there is no file or it is unreadable: federation then rests on
// retry_join and on the other servers).
func (c *Cluster) loadWANPeers() []string {
	buf, err := os.ReadFile(c.wanPeersPath())
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.logger.Warn("cannot read the servers of other regions", "path", c.wanPeersPath(), "error", err)
		}
		return nil
	}
	var addrs []string
	if err := json.Unmarshal(buf, &addrs); err != nil {
		c.logger.Warn("ignoring a malformed list of servers of other regions", "path", c.wanPeersPath(), "error", err)
		return nil
	}
	return addrs
}

// remoteAddrs are the sorted rpc addresses of the servers of other regions
// that have not left.
func remoteAddrs(views []wan.View, region string) []string {
	var out []string
	for _, v := range views {
		if v.Region != region && v.Status != wan.StatusLeft {
			out = append(out, v.Addr)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// saveWANPeers writes addrs when they differ from the last written ones.
func (c *Cluster) saveWANPeers(addrs []string) {
	if c.wanSaved != nil && slices.Equal(*c.wanSaved, addrs) {
		return
	}
	if err := writeFileAtomic(c.wanPeersPath(), addrs); err != nil {
		c.logger.Warn("cannot save the servers of other regions", "path", c.wanPeersPath(), "error", err)
		return
	}
	c.wanSaved = &addrs
}

func writeFileAtomic(path string, v any) error {
	buf, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename: %w", err)
	}
	return nil
}
