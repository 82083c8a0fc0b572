package command

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/nomad/api"
	"github.com/zclconf/go-cty/cty"
)

var volumeSpecSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "type", Required: true}, {Name: "name"}, {Name: "namespace"}, {Name: "id"},
		{Name: "plugin_id"}, {Name: "node_pool"}, {Name: "node_id"},
		{Name: "capacity_min"}, {Name: "capacity_max"}, {Name: "host_path"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "capability"}, {Type: "constraint"}, {Type: "parameters"}},
}

// parseHostVolumeSpec parses a volume specification (HCL) of type "host",
// as `volume create` takes it.
func parseHostVolumeSpec(name string, data []byte) (*api.HostVolume, error) {
	file, diags := hclsyntax.ParseConfig(data, name, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	content, diags := file.Body.Content(volumeSpecSchema)
	if diags.HasErrors() {
		return nil, diags
	}
	str := func(attrs hcl.Attributes, key string) (string, error) {
		a, ok := attrs[key]
		if !ok {
			return "", nil
		}
		val, d := a.Expr.Value(nil)
		if d.HasErrors() {
			// "${attr.x}" (a constraint's target) is the server's to
			// interpolate: kept as written.
			switch a.Expr.(type) {
			case *hclsyntax.TemplateExpr, *hclsyntax.TemplateWrapExpr:
				r := a.Expr.Range()
				return strings.Trim(string(data[r.Start.Byte:r.End.Byte]), `"`), nil
			}
			return "", d
		}
		if val.Type() == cty.Number {
			bf := val.AsBigFloat()
			return bf.Text('f', -1), nil
		}
		if val.Type() != cty.String {
			return "", fmt.Errorf("%s: %s must be a string", name, key)
		}
		return val.AsString(), nil
	}
	typ, err := str(content.Attributes, "type")
	if err != nil {
		return nil, err
	}
	switch typ {
	case "host":
	case "csi":
		return nil, fmt.Errorf("%s: CSI volumes are not supported by Drover", name)
	default:
		return nil, fmt.Errorf("%s: unknown volume type %q (Drover has host volumes)", name, typ)
	}
	v := &api.HostVolume{}
	for key, dst := range map[string]*string{
		"name": &v.Name, "namespace": &v.Namespace, "id": &v.ID, "plugin_id": &v.PluginID,
		"node_pool": &v.NodePool, "node_id": &v.NodeID, "host_path": &v.HostPath,
	} {
		if *dst, err = str(content.Attributes, key); err != nil {
			return nil, err
		}
	}
	for key, dst := range map[string]*int64{"capacity_min": &v.RequestedCapacityMinBytes, "capacity_max": &v.RequestedCapacityMaxBytes} {
		s, err := str(content.Attributes, key)
		if err != nil {
			return nil, err
		}
		if s == "" {
			continue
		}
		if *dst, err = parseBytes(s); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", name, key, err)
		}
	}
	for _, b := range content.Blocks {
		attrs, d := b.Body.JustAttributes()
		if d.HasErrors() {
			return nil, d
		}
		get := func(key string) (string, error) { return str(attrs, key) }
		switch b.Type {
		case "capability":
			c := &api.HostVolumeCapability{}
			am, err := get("access_mode")
			if err != nil {
				return nil, err
			}
			at, err := get("attachment_mode")
			if err != nil {
				return nil, err
			}
			c.AccessMode, c.AttachmentMode = api.HostVolumeAccessMode(am), api.HostVolumeAttachmentMode(at)
			v.RequestedCapabilities = append(v.RequestedCapabilities, c)
		case "constraint":
			c := &api.Constraint{}
			for key, dst := range map[string]*string{"attribute": &c.LTarget, "operator": &c.Operand, "value": &c.RTarget} {
				if *dst, err = get(key); err != nil {
					return nil, err
				}
			}
			if c.Operand == "" {
				c.Operand = "="
			}
			v.Constraints = append(v.Constraints, c)
		case "parameters":
			v.Parameters = map[string]string{}
			for key := range attrs {
				if v.Parameters[key], err = get(key); err != nil {
					return nil, err
				}
			}
		}
	}
	return v, nil
}

// parseBytes parses a size such as "10GiB", "500MB" or "1024".
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   float64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"B", 1},
	}
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(strings.ToUpper(t), strings.ToUpper(u.suffix)) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n < 0 || n*mult > math.MaxInt64 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return int64(n * mult), nil
}
