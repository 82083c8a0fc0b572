package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/wire"
)

// HostVolumePluginVersion is the version of the built-in mkdir host volume
// plugin, fingerprinted as the node attribute
// "plugins.host_volume.mkdir.version" (the server places volumes only on
// nodes that have it).
const HostVolumePluginVersion = "0.0.1"

// hostVolumePluginAttr is the node attribute of the mkdir plugin.
const hostVolumePluginAttr = "plugins.host_volume." + structs.HostVolumePluginMkdir + ".version"

// hostVolumeChanges is what the client must do to have the dynamic host
// volumes the server placed on its node: create the directories of those
// it lacks, remove those of volumes deleted since, and offer the resulting
// set (with the static host volumes) as Node.HostVolumes.
type hostVolumeChanges struct {
	create []*structs.HostVolume
	remove []string // directory names under host_volumes_dir
}

// planHostVolumes decides the changes: vols are the volumes placed on the
// node, present the directory names under host_volumes_dir. Only names that
// are volume IDs (UUIDs) are ever removed: anything else there is not the
// plugin's.
func planHostVolumes(vols []*structs.HostVolume, present []string) hostVolumeChanges {
	var ch hostVolumeChanges
	have := map[string]bool{}
	for _, p := range present {
		have[p] = true
	}
	want := map[string]bool{}
	for _, v := range vols {
		if v.Registered() {
			continue // an existing directory: nothing to create or remove
		}
		want[v.ID] = true
		if !have[v.ID] {
			ch.create = append(ch.create, v)
		}
	}
	for _, p := range present {
		if _, err := uuid.Parse(p); err == nil && !want[p] {
			ch.remove = append(ch.remove, p)
		}
	}
	return ch
}

// nodeHostVolumes is the node's host volumes: the static ones and each
// dynamic volume in created, by name, at the path created gives it (its
// directory exists: under the plugin's directory for a plugin's volume,
// host_path resolved for a registered one).
func nodeHostVolumes(static map[string]*structs.ClientHostVolumeConfig, vols []*structs.HostVolume, created map[string]string) map[string]*structs.ClientHostVolumeConfig {
	out := copyHostVolumes(static)
	for _, v := range vols {
		p, ok := created[v.ID]
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]*structs.ClientHostVolumeConfig{}
		}
		if _, taken := out[v.Name]; taken {
			continue // a static volume keeps its name
		}
		out[v.Name] = &structs.ClientHostVolumeConfig{Path: p, ReadOnly: v.ReadOnly(), ID: v.ID}
	}
	return out
}

// mkdirCreate is the mkdir plugin's create: the directory <dir>/<id>, with
// the volume's mode (octal, default 0755) and owner (uid, gid) parameters.
func mkdirCreate(dir string, v *structs.HostVolume) error {
	mode := os.FileMode(0o755)
	if m := v.Parameters["mode"]; m != "" {
		n, err := strconv.ParseUint(m, 8, 32)
		if err != nil {
			return fmt.Errorf("volume %s: mode %q is not an octal mode", v.ID, m)
		}
		mode = os.FileMode(n)
	}
	uid, gid := -1, -1
	for key, dst := range map[string]*int{"uid": &uid, "gid": &gid} {
		if s := v.Parameters[key]; s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				return fmt.Errorf("volume %s: %s %q is not a number", v.ID, key, s)
			}
			*dst = n
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	p := filepath.Join(dir, v.ID)
	if err := os.Mkdir(p, mode); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := os.Chmod(p, mode); err != nil { // not the umask's
		return err
	}
	if uid >= 0 || gid >= 0 {
		return os.Lchown(p, uid, gid)
	}
	return nil
}

// registeredAt reports whether p (a directory of the mkdir plugin) is a
// registered volume's, as written or once resolved (resolved, by volume
// ID).
func registeredAt(vols []*structs.HostVolume, resolved map[string]string, p string) bool {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		real = p
	}
	return slices.ContainsFunc(vols, func(v *structs.HostVolume) bool {
		if !v.Registered() {
			return false
		}
		r, ok := resolved[v.ID]
		return filepath.Clean(v.HostPath) == p || (ok && (r == p || r == real))
	})
}

// hostVolumeDirs lists the names under dir ("" for none yet).
func hostVolumeDirs(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// hostVolumeLoop long-polls the dynamic host volumes placed on the node
// once it is registered and carries out planHostVolumes; when the node's
// host volumes change it registers the node again (which makes the new
// volumes ready on the server).
func (c *Client) hostVolumeLoop(ctx context.Context) {
	c.pollLoop(ctx, hclog.Warn, "host volumes: not in sync with the server; retrying", func(ctx context.Context, index uint64) (uint64, error) {
		vols, next, err := c.rpc.nodeHostVolumes(ctx, c.NodeID(), index, c.cfg.timing.allocWait)
		if err != nil {
			return 0, err
		}
		return next, c.applyHostVolumes(vols)
	})
}

// applyHostVolumes carries out the changes for vols and updates the node.
func (c *Client) applyHostVolumes(vols []*structs.HostVolume) error {
	dir := c.cfg.HostVolumesDir
	present, err := hostVolumeDirs(dir)
	if err != nil {
		return err
	}
	ch := planHostVolumes(vols, present)
	// A registered volume is offered at its host_path with every symlink
	// followed (resolveRegisteredPath), so that a link changed later
	// cannot move it; the server then shows that path.
	created := map[string]string{}
	for _, v := range vols {
		if !v.Registered() {
			continue
		}
		p, err := resolveRegisteredPath(v.HostPath, c.cfg.DataDir)
		if err != nil {
			c.logger.Warn("registered host volume's host_path has no directory on this node; not offered", "id", v.ID, "name", v.Name, "host_path", v.HostPath, "error", err)
			continue
		}
		created[v.ID] = p
	}
	var errs []error
	for _, id := range ch.remove {
		if registeredAt(vols, created, filepath.Join(dir, id)) {
			continue // a registered volume's directory is never removed
		}
		if err := os.RemoveAll(filepath.Join(dir, id)); err != nil {
			errs = append(errs, err)
			continue
		}
		c.logger.Info("host volume deleted", "id", id)
	}
	for _, p := range present {
		if _, ok := created[p]; !ok {
			created[p] = filepath.Join(dir, p)
		}
	}
	for _, v := range ch.create {
		if err := mkdirCreate(dir, v); err != nil {
			errs = append(errs, fmt.Errorf("creating host volume %q: %w", v.Name, err))
			continue
		}
		created[v.ID] = filepath.Join(dir, v.ID)
		c.logger.Info("host volume created", "id", v.ID, "name", v.Name, "path", filepath.Join(dir, v.ID))
	}
	vols2 := nodeHostVolumes(c.cfg.HostVolumes, vols, created)
	c.nodeMu.Lock()
	changed := !maps.EqualFunc(c.node.HostVolumes, vols2, func(a, b *structs.ClientHostVolumeConfig) bool { return *a == *b })
	if changed {
		n := c.node.Copy()
		n.HostVolumes = vols2
		c.node = n
	}
	c.nodeMu.Unlock()
	if changed {
		c.requestRegister()
	}
	return errors.Join(errs...)
}

// nodeHostVolumes is the blocking query for the volumes placed on the node.
func (s *serverConn) nodeHostVolumes(ctx context.Context, nodeID string, index uint64, wait time.Duration) ([]*structs.HostVolume, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, wait+wait/16+callTimeout)
	defer cancel()
	q := url.Values{"index": {strconv.FormatUint(index, 10)}, "wait": {formatWait(wait)}}
	var out []*structs.HostVolume
	h, err := s.call(ctx, http.MethodGet, wire.NodePath(wire.RouteNodeHostVolumes, nodeID), q, nil, &out)
	if err != nil {
		return nil, 0, err
	}
	next, _ := strconv.ParseUint(h.Get("X-Nomad-Index"), 10, 64)
	return out, next, nil
}
