package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/gocty"
)

// ParseFile reads an agent configuration file, or every "*.hcl" and
// "*.json" file of a directory in lexical order (hidden files and
// subdirectories skipped), merged with later files winning. Like Parse, it
// returns only what the files set; merge the result onto DefaultConfig.
func ParseFile(path string) (*Config, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if !info.IsDir() {
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		return Parse(path, src)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	out := &Config{}
	for _, e := range entries { // os.ReadDir sorts by name
		name := e.Name()
		ext := filepath.Ext(name)
		if e.IsDir() || strings.HasPrefix(name, ".") || (ext != ".hcl" && ext != ".json") {
			continue
		}
		c, err := ParseFile(filepath.Join(path, name))
		if err != nil {
			return nil, err
		}
		out = out.Merge(c)
	}
	return out, nil
}

// Parse parses one agent configuration: HCL's JSON syntax when the content
// is a JSON object (whatever the file is called, as Nomad does), the native
// HCL syntax otherwise. path names the source in error messages, which read
// "path:line:col: summary: detail", one per line.
func Parse(path string, src []byte) (*Config, error) {
	var (
		file  *hcl.File
		diags hcl.Diagnostics
		shift columnShift
	)
	if isJSON(src) {
		file, diags = json.Parse(src, path)
	} else {
		src, shift = rewriteClientMapBlocks(src, path)
		file, diags = hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	}
	if diags.HasErrors() {
		return nil, diagError(diags, shift)
	}
	c := &Config{}
	diags = decodeRoot(file.Body, c)
	if diags.HasErrors() {
		return nil, diagError(diags, shift)
	}
	return c, nil
}

// isJSON reports whether src is a JSON object: its first non-space byte is
// '{'. Native HCL cannot start with a brace.
func isJSON(src []byte) bool {
	trimmed := bytes.TrimLeft(src, " \t\r\n\ufeff")
	return len(trimmed) > 0 && trimmed[0] == '{'
}

// diagError renders error diagnostics as "file:line:col: summary: detail".
func diagError(diags hcl.Diagnostics, shift columnShift) error {
	var errs []error
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		if d.Subject != nil {
			line, col := d.Subject.Start.Line, shift.adjust(d.Subject.Start.Line, d.Subject.Start.Column)
			msg = fmt.Sprintf("%s:%d:%d: %s", d.Subject.Filename, line, col, msg)
		}
		errs = append(errs, errors.New(msg))
	}
	return errors.Join(errs...)
}

var (
	rootSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{
			{Name: "name"}, {Name: "data_dir"}, {Name: "bind_addr"},
			{Name: "datacenter"}, {Name: "region"}, {Name: "log_level"}, {Name: "enable_debug"},
		},
		Blocks: []hcl.BlockHeaderSchema{
			{Type: "ports"}, {Type: "advertise"}, {Type: "server"}, {Type: "client"}, {Type: "acl"},
			{Type: "plugin", LabelNames: []string{"name"}}, {Type: "tls"},
		},
	}
	aclSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "enabled"}, {Name: "token_min_expiration_ttl"}, {Name: "token_max_expiration_ttl"}},
	}
	portsSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "http"}, {Name: "rpc"}, {Name: "serf"}},
	}
	advertiseSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "http"}, {Name: "rpc"}},
	}
	serverSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{
			{Name: "enabled"}, {Name: "bootstrap_expect"}, {Name: "retry_join"},
			{Name: "registry_auth_config"}, {Name: "insecure_registries"}, {Name: "registry_request_budget"},
			{Name: "image_pinning"}, {Name: "prometheus_address"}, {Name: "gate_webhook_secret"},
			{Name: "min_heartbeat_ttl"}, {Name: "heartbeat_grace"}, {Name: "max_heartbeats_per_second"},
			{Name: "eval_gc_threshold"}, {Name: "job_gc_threshold"}, {Name: "deployment_gc_threshold"}, {Name: "node_gc_threshold"},
		},
		Blocks: []hcl.BlockHeaderSchema{{Type: "server_join"}, {Type: "client_introduction"}},
	}
	clientIntroductionSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "enforcement"}, {Name: "default_identity_ttl"}, {Name: "max_request_identity_ttl"}},
	}
	serverJoinSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "retry_join"}},
	}
	clientSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{
			{Name: "enabled"}, {Name: "servers"}, {Name: "node_class"},
			{Name: "node_pool"}, {Name: "meta"}, {Name: "options"},
			{Name: "min_dynamic_port"}, {Name: "max_dynamic_port"}, {Name: "intro_token"}, {Name: "chroot_env"},
			{Name: "host_volumes_dir"},
			{Name: "cni_path"}, {Name: "bridge_network_name"}, {Name: "bridge_network_subnet"},
			{Name: "bridge_network_hairpin_mode"}, {Name: "cni_config_dir"},
		},
		Blocks: []hcl.BlockHeaderSchema{{Type: "template"}, {Type: "artifact"}, {Type: "host_volume", LabelNames: []string{"name"}}, {Type: "host_network", LabelNames: []string{"name"}}},
	}
	clientTemplateSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "function_denylist"}, {Name: "disable_file_sandbox"}},
	}
	pluginSchema = &hcl.BodySchema{
		Blocks: []hcl.BlockHeaderSchema{{Type: "config"}},
	}
)

func decodeRoot(body hcl.Body, c *Config) hcl.Diagnostics {
	content, diags := body.Content(withNomadOnly(rootSchema, ""))
	noteNomadOnly(c, content, "", rootSchema)
	diags = append(diags, decodeAttrs(content.Attributes, map[string]any{
		"name":       &c.Name,
		"data_dir":   &c.DataDir,
		"bind_addr":  &c.BindAddr,
		"datacenter": &c.Datacenter,
		"region":     &c.Region,
		"log_level":  &c.LogLevel,
	})...)
	if a := content.Attributes["enable_debug"]; a != nil {
		diags = append(diags, decodeAttr(a, &c.EnableDebug)...)
	}
	seen := map[string]*hcl.Block{}
	for _, b := range content.Blocks {
		if b.Type != "plugin" {
			if d := checkDuplicate(seen, b, b.Type); d != nil {
				diags = append(diags, d)
				continue
			}
		}
		switch b.Type {
		case "ports":
			diags = append(diags, decodeBody(c, b.Body, portsSchema, "ports", map[string]any{
				"http": &c.Ports.HTTP, "rpc": &c.Ports.RPC, "serf": &c.Ports.Serf,
			})...)
		case "advertise":
			diags = append(diags, decodeBody(c, b.Body, advertiseSchema, "advertise", map[string]any{
				"http": &c.Advertise.HTTP, "rpc": &c.Advertise.RPC,
			})...)
		case "acl":
			diags = append(diags, decodeACL(c, b.Body)...)
		case "server":
			diags = append(diags, decodeServer(c, b.Body, &c.Server)...)
		case "client":
			diags = append(diags, decodeClient(c, b.Body, &c.Client)...)
		case "tls":
			diags = append(diags, decodeTLS(c, b.Body)...)
		case "plugin":
			if d := checkDuplicate(seen, b, "plugin "+b.Labels[0]); d != nil {
				diags = append(diags, d)
				continue
			}
			if c.Plugins == nil {
				c.Plugins = map[string]PluginConfig{}
			}
			p, d := decodePlugin(b.Body)
			diags = append(diags, d...)
			c.Plugins[b.Labels[0]] = p
		}
	}
	return diags
}

func checkDuplicate(seen map[string]*hcl.Block, b *hcl.Block, key string) *hcl.Diagnostic {
	if prev, ok := seen[key]; ok {
		return &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Duplicate %s block", key),
			Detail: fmt.Sprintf("Only one %s block is allowed; the first is at %s:%d:%d.",
				key, prev.DefRange.Filename, prev.DefRange.Start.Line, prev.DefRange.Start.Column),
			Subject: b.DefRange.Ptr(),
		}
	}
	seen[key] = b
	return nil
}

// decodeACL decodes the acl block.
func decodeACL(c *Config, body hcl.Body) hcl.Diagnostics {
	content, diags := body.Content(withNomadOnly(aclSchema, "acl"))
	noteNomadOnly(c, content, "acl", aclSchema)
	diags = append(diags, decodeAttrs(content.Attributes, map[string]any{"enabled": &c.ACL.Enabled})...)
	diags = append(diags, decodeDuration(content.Attributes["token_min_expiration_ttl"], &c.ACL.TokenMinExpirationTTL)...)
	return append(diags, decodeDuration(content.Attributes["token_max_expiration_ttl"], &c.ACL.TokenMaxExpirationTTL)...)
}

func decodeServer(c *Config, body hcl.Body, s *ServerConfig) hcl.Diagnostics {
	content, diags := body.Content(withNomadOnly(serverSchema, "server"))
	noteNomadOnly(c, content, "server", serverSchema)
	diags = append(diags, decodeAttrs(content.Attributes, map[string]any{
		"enabled":          &s.Enabled,
		"bootstrap_expect": &s.BootstrapExpect,
		"retry_join":       &s.RetryJoin,

		"registry_auth_config":    &s.RegistryAuthConfig,
		"insecure_registries":     &s.InsecureRegistries,
		"registry_request_budget": &s.RegistryRequestBudget,
		"image_pinning":           &s.ImagePinning,
		"prometheus_address":      &s.PrometheusAddress,
		"gate_webhook_secret":     &s.GateWebhookSecret,
	})...)
	diags = append(diags, decodeDuration(content.Attributes["min_heartbeat_ttl"], &s.MinHeartbeatTTL)...)
	diags = append(diags, decodeDuration(content.Attributes["heartbeat_grace"], &s.HeartbeatGrace)...)
	diags = append(diags, decodeScaleConfig(content.Attributes, s)...)
	seen := map[string]*hcl.Block{}
	for _, b := range content.Blocks {
		if b.Type != "server_join" && b.Type != "client_introduction" {
			continue // Nomad-only, noted above
		}
		if d := checkDuplicate(seen, b, b.Type); d != nil {
			diags = append(diags, d)
			continue
		}
		if b.Type == "client_introduction" {
			diags = append(diags, decodeClientIntroduction(c, b.Body, &s.ClientIntroduction)...)
			continue
		}
		var join []string
		diags = append(diags, decodeBody(c, b.Body, serverJoinSchema, "server.server_join", map[string]any{"retry_join": &join})...)
		s.RetryJoin = append(s.RetryJoin, join...)
	}
	return diags
}

// decodeClientIntroduction decodes server.client_introduction.
func decodeClientIntroduction(c *Config, body hcl.Body, ci *ClientIntroductionConfig) hcl.Diagnostics {
	content, diags := body.Content(withNomadOnly(clientIntroductionSchema, "server.client_introduction"))
	noteNomadOnly(c, content, "server.client_introduction", clientIntroductionSchema)
	diags = append(diags, decodeAttrs(content.Attributes, map[string]any{"enforcement": &ci.Enforcement})...)
	diags = append(diags, decodeDuration(content.Attributes["default_identity_ttl"], &ci.DefaultIdentityTTL)...)
	return append(diags, decodeDuration(content.Attributes["max_request_identity_ttl"], &ci.MaxRequestIdentityTTL)...)
}

func decodeClient(c *Config, body hcl.Body, cl *ClientConfig) hcl.Diagnostics {
	content, diags := body.Content(withNomadOnly(clientSchema, "client"))
	noteNomadOnly(c, content, "client", clientSchema)
	diags = append(diags, decodeAttrs(content.Attributes, map[string]any{
		"enabled":                     &cl.Enabled,
		"servers":                     &cl.Servers,
		"node_class":                  &cl.NodeClass,
		"node_pool":                   &cl.NodePool,
		"min_dynamic_port":            &cl.MinDynamicPort,
		"max_dynamic_port":            &cl.MaxDynamicPort,
		"intro_token":                 &cl.IntroToken,
		"host_volumes_dir":            &cl.HostVolumesDir,
		"cni_path":                    &cl.CNIPath,
		"cni_config_dir":              &cl.CNIConfigDir,
		"bridge_network_name":         &cl.BridgeNetworkName,
		"bridge_network_subnet":       &cl.BridgeNetworkSubnet,
		"bridge_network_hairpin_mode": &cl.BridgeNetworkHairpinMode,
	})...)
	if a, ok := content.Attributes["meta"]; ok {
		m, d := decodeStringMap(a)
		diags = append(diags, d...)
		cl.Meta = m
	}
	if a, ok := content.Attributes["options"]; ok {
		m, d := decodeStringMap(a)
		diags = append(diags, d...)
		cl.Options = m
	}
	if a, ok := content.Attributes["chroot_env"]; ok {
		m, d := decodeStringMap(a)
		diags = append(diags, d...)
		cl.ChrootEnv = m
	}
	seen := map[string]*hcl.Block{}
	for _, b := range content.Blocks {
		switch b.Type {
		case "template":
			if d := checkDuplicate(seen, b, "client.template"); d != nil {
				diags = append(diags, d)
				continue
			}
			diags = append(diags, decodeClientTemplate(c, b.Body, &cl.Template)...)
		case "artifact":
			if d := checkDuplicate(seen, b, b.Type); d != nil {
				diags = append(diags, d)
				continue
			}
			cl.Artifact = &ArtifactConfig{}
			diags = append(diags, decodeArtifact(c, b.Body, cl.Artifact)...)
		}
	}
	diags = append(diags, decodeHostNetworks(content.Blocks, cl)...)
	return append(diags, decodeHostVolumes(content.Blocks, cl)...)
}

// decodeClientTemplate decodes client.template; function_denylist = []
// is kept as an empty (non-nil) list: every function allowed.
func decodeClientTemplate(c *Config, body hcl.Body, t *ClientTemplateConfig) hcl.Diagnostics {
	content, diags := body.Content(withNomadOnly(clientTemplateSchema, "client.template"))
	noteNomadOnly(c, content, "client.template", clientTemplateSchema)
	var deny []string
	diags = append(diags, decodeAttrs(content.Attributes, map[string]any{
		"function_denylist":    &deny,
		"disable_file_sandbox": &t.DisableFileSandbox,
	})...)
	if _, ok := content.Attributes["function_denylist"]; ok {
		if deny == nil {
			deny = []string{}
		}
		t.FunctionDenylist = deny
	}
	return diags
}

func decodePlugin(body hcl.Body) (PluginConfig, hcl.Diagnostics) {
	content, diags := body.Content(pluginSchema)
	p := PluginConfig{}
	seen := map[string]*hcl.Block{}
	for _, b := range content.Blocks { // only config
		if d := checkDuplicate(seen, b, b.Type); d != nil {
			diags = append(diags, d)
			continue
		}
		m, d := opaqueBody(b.Body)
		diags = append(diags, d...)
		p.Config = m
	}
	return p, diags
}

// decodeBody checks body against schema (plus the Nomad-only keys of the
// block at path, noted in c.Ignored) and decodes its attributes.
func decodeBody(c *Config, body hcl.Body, schema *hcl.BodySchema, path string, targets map[string]any) hcl.Diagnostics {
	content, diags := body.Content(withNomadOnly(schema, path))
	noteNomadOnly(c, content, path, schema)
	return append(diags, decodeAttrs(content.Attributes, targets)...)
}

// decodeAttrs decodes each present attribute into its target pointer, in
// source order so that diagnostics come out in a stable order.
func decodeAttrs(attrs hcl.Attributes, targets map[string]any) hcl.Diagnostics {
	names := make([]string, 0, len(attrs))
	for name := range attrs {
		if _, ok := targets[name]; ok {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		return attrs[names[i]].Range.Start.Byte < attrs[names[j]].Range.Start.Byte
	})
	var diags hcl.Diagnostics
	for _, name := range names {
		diags = append(diags, decodeAttr(attrs[name], targets[name])...)
	}
	return diags
}

// decodeAttr evaluates a (no variables or functions) and stores it into
// target, a pointer to a Go value. gohcl would do the same, but it pulls in
// a module this repository does not carry.
func decodeAttr(a *hcl.Attribute, target any) hcl.Diagnostics {
	val, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return diags
	}
	ty, err := gocty.ImpliedType(target)
	if err != nil {
		panic(fmt.Sprintf("config: unsuitable decode target for %s: %v", a.Name, err))
	}
	if val.IsNull() {
		err = errors.New("must not be null")
	} else if val, err = convert.Convert(val, ty); err == nil {
		err = gocty.FromCtyValue(val, target)
	}
	if err != nil {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Invalid value for %q", a.Name),
			Detail:   err.Error(),
			Subject:  a.Expr.Range().Ptr(),
		})
	}
	return diags
}

// decodeStringMap decodes a map attribute (`meta = {...}`, or a rewritten
// `meta {...}` block). A JSON list of objects (the JSON form of repeated
// blocks) is merged in order.
func decodeStringMap(a *hcl.Attribute) (map[string]string, hcl.Diagnostics) {
	val, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return nil, diags
	}
	invalid := func(detail string) hcl.Diagnostics {
		return append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Invalid value for %q", a.Name),
			Detail:   detail,
			Subject:  a.Expr.Range().Ptr(),
		})
	}
	if val.IsNull() {
		return nil, nil
	}
	parts := []cty.Value{val}
	if ty := val.Type(); ty.IsTupleType() || ty.IsListType() {
		parts = val.AsValueSlice()
	}
	out := map[string]string{}
	for _, part := range parts {
		m, err := convert.Convert(part, cty.Map(cty.String))
		if err != nil {
			return nil, invalid("a map of strings is required: " + err.Error())
		}
		if m.IsNull() {
			continue
		}
		for k, v := range m.AsValueMap() {
			if v.IsNull() {
				return nil, invalid(fmt.Sprintf("the value of %q must not be null", k))
			}
			out[k] = v.AsString()
		}
	}
	return out, diags
}

// decodeDuration decodes a duration string such as "10s" into target; a nil
// attribute leaves target alone.
func decodeDuration(a *hcl.Attribute, target *time.Duration) hcl.Diagnostics {
	if a == nil {
		return nil
	}
	var str string
	if diags := decodeAttr(a, &str); diags.HasErrors() {
		return diags
	}
	d, err := time.ParseDuration(str)
	if err != nil || d < 0 {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Invalid value for %q", a.Name),
			Detail:   fmt.Sprintf("must be a non-negative duration such as \"10s\", got %q", str),
			Subject:  a.Expr.Range().Ptr(),
		}}
	}
	*target = d
	return nil
}
