package acl

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"
)

// Coarse policies, as written in `policy = "..."`.
const (
	PolicyDeny  = "deny"
	PolicyRead  = "read"
	PolicyWrite = "write"
	PolicyScale = "scale"
	PolicyList  = "list" // plugin rules only
)

// Namespace capabilities, Nomad's names.
const (
	NamespaceCapabilityDeny                 = "deny"
	NamespaceCapabilityListJobs             = "list-jobs"
	NamespaceCapabilityParseJob             = "parse-job"
	NamespaceCapabilityReadJob              = "read-job"
	NamespaceCapabilitySubmitJob            = "submit-job"
	NamespaceCapabilityDispatchJob          = "dispatch-job"
	NamespaceCapabilityReadLogs             = "read-logs"
	NamespaceCapabilityReadFS               = "read-fs"
	NamespaceCapabilityAllocExec            = "alloc-exec"
	NamespaceCapabilityAllocNodeExec        = "alloc-node-exec"
	NamespaceCapabilityAllocLifecycle       = "alloc-lifecycle"
	NamespaceCapabilityCSIRegisterPlugin    = "csi-register-plugin"
	NamespaceCapabilityCSIWriteVolume       = "csi-write-volume"
	NamespaceCapabilityCSIReadVolume        = "csi-read-volume"
	NamespaceCapabilityCSIListVolume        = "csi-list-volume"
	NamespaceCapabilityCSIMountVolume       = "csi-mount-volume"
	NamespaceCapabilityHostVolumeCreate     = "host-volume-create"
	NamespaceCapabilityHostVolumeRegister   = "host-volume-register"
	NamespaceCapabilityHostVolumeRead       = "host-volume-read"
	NamespaceCapabilityHostVolumeWrite      = "host-volume-write"
	NamespaceCapabilityHostVolumeDelete     = "host-volume-delete"
	NamespaceCapabilityListScalingPolicies  = "list-scaling-policies"
	NamespaceCapabilityReadScalingPolicy    = "read-scaling-policy"
	NamespaceCapabilityReadJobScaling       = "read-job-scaling"
	NamespaceCapabilityScaleJob             = "scale-job"
	NamespaceCapabilitySubmitRecommendation = "submit-recommendation"
	NamespaceCapabilitySentinelOverride     = "sentinel-override"
)

// namespaceCapabilities lists every valid namespace capability.
var namespaceCapabilities = []string{
	NamespaceCapabilityDeny, NamespaceCapabilityListJobs, NamespaceCapabilityParseJob,
	NamespaceCapabilityReadJob, NamespaceCapabilitySubmitJob, NamespaceCapabilityDispatchJob,
	NamespaceCapabilityReadLogs, NamespaceCapabilityReadFS, NamespaceCapabilityAllocExec,
	NamespaceCapabilityAllocNodeExec, NamespaceCapabilityAllocLifecycle,
	NamespaceCapabilityCSIRegisterPlugin, NamespaceCapabilityCSIWriteVolume,
	NamespaceCapabilityCSIReadVolume, NamespaceCapabilityCSIListVolume,
	NamespaceCapabilityCSIMountVolume, NamespaceCapabilityHostVolumeCreate,
	NamespaceCapabilityHostVolumeRegister, NamespaceCapabilityHostVolumeRead,
	NamespaceCapabilityHostVolumeWrite, NamespaceCapabilityHostVolumeDelete,
	NamespaceCapabilityListScalingPolicies, NamespaceCapabilityReadScalingPolicy,
	NamespaceCapabilityReadJobScaling, NamespaceCapabilityScaleJob,
	NamespaceCapabilitySubmitRecommendation, NamespaceCapabilitySentinelOverride,
}

// Variable capabilities (a namespace rule's `variables { path "..." {} }`).
const (
	VariablesCapabilityList    = "list"
	VariablesCapabilityRead    = "read"
	VariablesCapabilityWrite   = "write"
	VariablesCapabilityDestroy = "destroy"
	VariablesCapabilityDeny    = "deny"
)

var variableCapabilities = []string{
	VariablesCapabilityList, VariablesCapabilityRead, VariablesCapabilityWrite,
	VariablesCapabilityDestroy, VariablesCapabilityDeny,
}

// Host volume capabilities (`host_volume "name" { capabilities = [...] }`).
const (
	HostVolumeCapabilityDeny           = "deny"
	HostVolumeCapabilityMountReadOnly  = "mount-readonly"
	HostVolumeCapabilityMountReadWrite = "mount-readwrite"
)

var hostVolumeCapabilities = []string{
	HostVolumeCapabilityDeny, HostVolumeCapabilityMountReadOnly, HostVolumeCapabilityMountReadWrite,
}

// Policy is one parsed ACL policy document.
type Policy struct {
	Namespaces  []*NamespaceRule
	HostVolumes []*HostVolumeRule
	NodePools   []*NodePoolRule
	// Node, Agent, Operator, Quota and Plugin are the coarse policies of
	// those areas ("" when the document has no such rule).
	Node     string
	Agent    string
	Operator string
	Quota    string
	Plugin   string
}

// NamespaceRule is a `namespace "name" {}` rule; Name may be a glob ("*",
// "prod-*").
type NamespaceRule struct {
	Name   string
	Policy string
	// Capabilities are the expanded capabilities: the coarse policy's plus
	// the listed ones.
	Capabilities []string
	Variables    []*VariablesPathRule
}

// VariablesPathRule grants capabilities on variable paths matching
// PathSpec (a glob).
type VariablesPathRule struct {
	PathSpec     string
	Capabilities []string
}

// HostVolumeRule is a `host_volume "name" {}` rule.
type HostVolumeRule struct {
	Name         string
	Policy       string
	Capabilities []string
}

// NodePoolRule is a `node_pool "name" {}` rule.
type NodePoolRule struct {
	Name   string
	Policy string
}

// expandNamespacePolicy returns the capabilities a coarse namespace policy
// grants.
func expandNamespacePolicy(policy string) []string {
	read := []string{
		NamespaceCapabilityListJobs, NamespaceCapabilityParseJob, NamespaceCapabilityReadJob,
		NamespaceCapabilityCSIListVolume, NamespaceCapabilityCSIReadVolume,
		NamespaceCapabilityReadJobScaling, NamespaceCapabilityListScalingPolicies,
		NamespaceCapabilityReadScalingPolicy, NamespaceCapabilityHostVolumeRead,
	}
	switch policy {
	case PolicyDeny:
		return []string{NamespaceCapabilityDeny}
	case PolicyRead:
		return read
	case PolicyWrite:
		return append(read,
			NamespaceCapabilityScaleJob, NamespaceCapabilitySubmitJob, NamespaceCapabilityDispatchJob,
			NamespaceCapabilityReadLogs, NamespaceCapabilityReadFS, NamespaceCapabilityAllocExec,
			NamespaceCapabilityAllocLifecycle, NamespaceCapabilityCSIMountVolume,
			NamespaceCapabilityCSIWriteVolume, NamespaceCapabilitySubmitRecommendation,
			NamespaceCapabilityHostVolumeCreate, NamespaceCapabilityHostVolumeWrite)
	case PolicyScale:
		return []string{
			NamespaceCapabilityListScalingPolicies, NamespaceCapabilityReadScalingPolicy,
			NamespaceCapabilityReadJobScaling, NamespaceCapabilityScaleJob,
		}
	}
	return nil
}

// expandHostVolumePolicy returns the capabilities a coarse host volume
// policy grants.
func expandHostVolumePolicy(policy string) []string {
	switch policy {
	case PolicyDeny:
		return []string{HostVolumeCapabilityDeny}
	case PolicyRead:
		return []string{HostVolumeCapabilityMountReadOnly}
	case PolicyWrite:
		return []string{HostVolumeCapabilityMountReadOnly, HostVolumeCapabilityMountReadWrite}
	}
	return nil
}

// Parse parses a policy document in HCL or its JSON form. Every problem is
// reported, each naming the rule and the value at fault; an empty document
// is an error.
func Parse(rules string) (*Policy, error) {
	src := []byte(rules)
	if strings.TrimSpace(rules) == "" {
		return nil, fmt.Errorf("policy is empty")
	}
	var file *hcl.File
	var diags hcl.Diagnostics
	if trimmed := bytes.TrimLeft(src, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '{' {
		file, diags = hcljson.Parse(src, "policy.json")
	} else {
		file, diags = hclsyntax.ParseConfig(src, "policy.hcl", hcl.InitialPos)
	}
	if diags.HasErrors() {
		return nil, diagsError(diags)
	}
	p := &Policy{}
	pr := &parser{}
	pr.root(file.Body, p)
	if len(pr.errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(pr.errs, "; "))
	}
	return p, nil
}

// diagsError joins HCL error diagnostics into one error.
func diagsError(diags hcl.Diagnostics) error {
	var msgs []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		if d.Subject != nil {
			msg = fmt.Sprintf("%d:%d: %s", d.Subject.Start.Line, d.Subject.Start.Column, msg)
		}
		msgs = append(msgs, msg)
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// parser collects every problem of a document.
type parser struct{ errs []string }

func (pr *parser) errorf(format string, args ...any) {
	pr.errs = append(pr.errs, fmt.Sprintf(format, args...))
}

func (pr *parser) diags(d hcl.Diagnostics) {
	if d.HasErrors() {
		pr.errs = append(pr.errs, diagsError(d).Error())
	}
}

var (
	rootSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "namespace", LabelNames: []string{"name"}},
		{Type: "host_volume", LabelNames: []string{"name"}},
		{Type: "node_pool", LabelNames: []string{"name"}},
		{Type: "node"}, {Type: "agent"}, {Type: "operator"}, {Type: "quota"}, {Type: "plugin"},
	}}
	namespaceSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "policy"}, {Name: "capabilities"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "variables"}},
	}
	variablesSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "path", LabelNames: []string{"path"}}}}
	capsSchema      = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "capabilities"}}}
	hostVolSchema   = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "policy"}, {Name: "capabilities"}}}
	policySchema    = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "policy", Required: true}}}
)

func (pr *parser) root(body hcl.Body, p *Policy) {
	content, d := body.Content(rootSchema)
	pr.diags(d)
	if content == nil {
		return
	}
	seen := map[string]bool{}
	for _, b := range content.Blocks {
		key := b.Type
		if len(b.Labels) > 0 {
			key += " " + b.Labels[0]
		}
		if seen[key] {
			pr.errorf("duplicate %s rule", quoteKey(b))
			continue
		}
		seen[key] = true
		switch b.Type {
		case "namespace":
			if r := pr.namespace(b); r != nil {
				p.Namespaces = append(p.Namespaces, r)
			}
		case "host_volume":
			if r := pr.hostVolume(b); r != nil {
				p.HostVolumes = append(p.HostVolumes, r)
			}
		case "node_pool":
			pol := pr.coarse(b, PolicyDeny, PolicyRead, PolicyWrite)
			if pol != "" {
				p.NodePools = append(p.NodePools, &NodePoolRule{Name: b.Labels[0], Policy: pol})
			}
		case "node":
			p.Node = pr.coarse(b, PolicyDeny, PolicyRead, PolicyWrite)
		case "agent":
			p.Agent = pr.coarse(b, PolicyDeny, PolicyRead, PolicyWrite)
		case "operator":
			p.Operator = pr.coarse(b, PolicyDeny, PolicyRead, PolicyWrite)
		case "quota":
			p.Quota = pr.coarse(b, PolicyDeny, PolicyRead, PolicyWrite)
		case "plugin":
			p.Plugin = pr.coarse(b, PolicyDeny, PolicyList, PolicyRead)
		}
	}
}

func quoteKey(b *hcl.Block) string {
	if len(b.Labels) > 0 {
		return fmt.Sprintf("%s %q", b.Type, b.Labels[0])
	}
	return b.Type
}

// stringAttr evaluates a string attribute; ok is false when absent.
func (pr *parser) stringAttr(where string, a *hcl.Attribute) (string, bool) {
	if a == nil {
		return "", false
	}
	v, d := a.Expr.Value(nil)
	if d.HasErrors() {
		pr.diags(d)
		return "", false
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		pr.errorf("%s: %s must be a string", where, a.Name)
		return "", false
	}
	return v.AsString(), true
}

// listAttr evaluates a list-of-strings attribute.
func (pr *parser) listAttr(where string, a *hcl.Attribute) []string {
	if a == nil {
		return nil
	}
	v, d := a.Expr.Value(nil)
	if d.HasErrors() {
		pr.diags(d)
		return nil
	}
	if v.IsNull() || !(v.Type().IsListType() || v.Type().IsTupleType() || v.Type().IsSetType()) {
		pr.errorf("%s: %s must be a list of strings", where, a.Name)
		return nil
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			pr.errorf("%s: %s must be a list of strings", where, a.Name)
			return nil
		}
		out = append(out, e.AsString())
	}
	return out
}

// coarse decodes a block holding only `policy = "..."`, one of allowed.
func (pr *parser) coarse(b *hcl.Block, allowed ...string) string {
	where := quoteKey(b) + " rule"
	content, d := b.Body.Content(policySchema)
	pr.diags(d)
	if content == nil {
		return ""
	}
	pol, ok := pr.stringAttr(where, content.Attributes["policy"])
	if !ok {
		return ""
	}
	if !slices.Contains(allowed, pol) {
		pr.errorf("%s: invalid policy %q (want one of %s)", where, pol, strings.Join(allowed, ", "))
		return ""
	}
	return pol
}

func (pr *parser) namespace(b *hcl.Block) *NamespaceRule {
	name := b.Labels[0]
	where := fmt.Sprintf("namespace %q rule", name)
	if !validGlobName(name) {
		pr.errorf("%s: invalid namespace name %q", where, name)
		return nil
	}
	content, d := b.Body.Content(namespaceSchema)
	pr.diags(d)
	if content == nil {
		return nil
	}
	r := &NamespaceRule{Name: name}
	if pol, ok := pr.stringAttr(where, content.Attributes["policy"]); ok {
		switch pol {
		case PolicyDeny, PolicyRead, PolicyWrite, PolicyScale:
			r.Policy = pol
		default:
			pr.errorf("%s: invalid policy %q (want one of read, write, scale, deny)", where, pol)
		}
	}
	caps := pr.listAttr(where, content.Attributes["capabilities"])
	for _, c := range caps {
		if !slices.Contains(namespaceCapabilities, c) {
			pr.errorf("%s: invalid capability %q", where, c)
		}
	}
	r.Capabilities = union(expandNamespacePolicy(r.Policy), caps)
	for _, vb := range content.Blocks { // variables
		vc, d := vb.Body.Content(variablesSchema)
		pr.diags(d)
		if vc == nil {
			continue
		}
		for _, pb := range vc.Blocks {
			pw := fmt.Sprintf("%s: variables path %q", where, pb.Labels[0])
			pc, d := pb.Body.Content(capsSchema)
			pr.diags(d)
			if pc == nil {
				continue
			}
			vcaps := pr.listAttr(pw, pc.Attributes["capabilities"])
			for _, c := range vcaps {
				if !slices.Contains(variableCapabilities, c) {
					pr.errorf("%s: invalid capability %q", pw, c)
				}
			}
			r.Variables = append(r.Variables, &VariablesPathRule{PathSpec: pb.Labels[0], Capabilities: vcaps})
		}
	}
	if r.Policy == "" && len(caps) == 0 && len(r.Variables) == 0 {
		pr.errorf("%s: needs a policy or capabilities", where)
		return nil
	}
	return r
}

func (pr *parser) hostVolume(b *hcl.Block) *HostVolumeRule {
	name := b.Labels[0]
	where := fmt.Sprintf("host_volume %q rule", name)
	content, d := b.Body.Content(hostVolSchema)
	pr.diags(d)
	if content == nil {
		return nil
	}
	r := &HostVolumeRule{Name: name}
	if pol, ok := pr.stringAttr(where, content.Attributes["policy"]); ok {
		switch pol {
		case PolicyDeny, PolicyRead, PolicyWrite:
			r.Policy = pol
		default:
			pr.errorf("%s: invalid policy %q (want one of read, write, deny)", where, pol)
		}
	}
	caps := pr.listAttr(where, content.Attributes["capabilities"])
	for _, c := range caps {
		if !slices.Contains(hostVolumeCapabilities, c) {
			pr.errorf("%s: invalid capability %q", where, c)
		}
	}
	r.Capabilities = union(expandHostVolumePolicy(r.Policy), caps)
	return r
}

// validGlobName reports whether name is a namespace name or glob: letters,
// digits, '-', '_' and '*'.
func validGlobName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '*':
		default:
			return false
		}
	}
	return true
}

// union returns a ∪ b without duplicates, in first-seen order.
func union(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	for _, s := range append(slices.Clone(a), b...) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
