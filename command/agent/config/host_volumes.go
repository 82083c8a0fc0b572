package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"sort"

	"github.com/hashicorp/hcl/v2"
)

// HostVolume is one client `host_volume "name" { path, read_only }` block:
// a host directory the node offers to jobs' volume blocks (type "host").
type HostVolume struct {
	Path     string
	ReadOnly bool
}

var hostVolumeSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "path", Required: true}, {Name: "read_only"}},
}

// decodeHostVolumes decodes the client's host_volume blocks into cl.
func decodeHostVolumes(blocks hcl.Blocks, cl *ClientConfig) hcl.Diagnostics {
	var diags hcl.Diagnostics
	seen := map[string]*hcl.Block{}
	for _, b := range blocks {
		if b.Type != "host_volume" {
			continue
		}
		if d := checkDuplicate(seen, b, "host_volume "+fmt.Sprintf("%q", b.Labels[0])); d != nil {
			diags = append(diags, d)
			continue
		}
		content, d := b.Body.Content(hostVolumeSchema)
		diags = append(diags, d...)
		var hv HostVolume
		diags = append(diags, decodeAttrs(content.Attributes, map[string]any{
			"path": &hv.Path, "read_only": &hv.ReadOnly,
		})...)
		if cl.HostVolumes == nil {
			cl.HostVolumes = map[string]HostVolume{}
		}
		cl.HostVolumes[b.Labels[0]] = hv
	}
	return diags
}

// mergeHostVolumes returns base with the volumes of over added; a volume
// named in both is over's.
func mergeHostVolumes(base, over map[string]HostVolume) map[string]HostVolume {
	if len(over) == 0 {
		return maps.Clone(base)
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]HostVolume{}
	}
	maps.Copy(out, over)
	return out
}

// validateHostVolumes checks each host volume: a name and an absolute
// path. That the path exists is the client's check, when it starts.
func validateHostVolumes(bad func(field, format string, args ...any), vols map[string]HostVolume) {
	names := make([]string, 0, len(vols))
	for n := range vols {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		field := fmt.Sprintf("client.host_volume %q", n)
		switch {
		case n == "":
			bad(field, "the volume needs a name")
		case vols[n].Path == "":
			bad(field, "path is required")
		case !filepath.IsAbs(vols[n].Path):
			bad(field, "path %q must be absolute", vols[n].Path)
		}
	}
}
