package jobspec

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/nomad/api"
)

// extension adds jobspec syntax that the api structs' tags do not describe.
// attrs/blocks extend the struct's schema; apply runs after the tagged fields
// are decoded, with the full body content.
type extension struct {
	attrs  []hcl.AttributeSchema
	blocks []hcl.BlockHeaderSchema
	apply  func(d *decoder, content *hcl.BodyContent, rv reflect.Value) hcl.Diagnostics
}

var (
	jobType        = reflect.TypeFor[api.Job]()
	groupType      = reflect.TypeFor[api.TaskGroup]()
	constraintType = reflect.TypeFor[api.Constraint]()
	affinityType   = reflect.TypeFor[api.Affinity]()
)

// Defaults Nomad's parser writes into what it sends: a constraint or
// affinity without `operator` compares with "=", an affinity without
// `weight` weighs 50 (the documented defaults of both blocks).
const (
	defaultOperator       = "="
	defaultAffinityWeight = int8(50)
)

// vaultBlock is the `vault` block Nomad accepts at job and group level
// besides the task's own (api.TaskGroup and api.Job have no field for it).
var vaultBlock = hcl.BlockHeaderSchema{Type: "vault"}

// Shorthand keys: `<key> = "x"` means Operand=<key>, RTarget="x".
// distinct_hosts/distinct_property are special (see applyShorthand).
var (
	affinityShorthands   = []string{"version", "semver", "regexp", "set_contains", "set_contains_any", "set_contains_all"}
	constraintShorthands = append([]string{"distinct_hosts", "distinct_property"}, affinityShorthands...)
)

// extensionFor returns the extension for struct type t, or nil.
func extensionFor(t reflect.Type) *extension {
	switch t {
	case jobType:
		return &extension{
			blocks: []hcl.BlockHeaderSchema{{Type: "task", LabelNames: []string{"name"}}, vaultBlock},
			apply:  applyJobExtras,
		}
	case groupType:
		return &extension{blocks: []hcl.BlockHeaderSchema{vaultBlock}, apply: applyGroupVault}
	case constraintType:
		return &extension{attrs: attrSchemas(constraintShorthands), apply: applyConstraint}
	case affinityType:
		return &extension{attrs: attrSchemas(affinityShorthands), apply: applyAffinity}
	}
	return nil
}

func attrSchemas(names []string) []hcl.AttributeSchema {
	out := make([]hcl.AttributeSchema, len(names))
	for i, n := range names {
		out[i] = hcl.AttributeSchema{Name: n}
	}
	return out
}

// applyJobExtras turns each `task "x" {}` directly under job into its own
// group named "x" holding just that task, appended after the explicit groups,
// then gives the job's `vault` block to every task that has none (after the
// groups gave theirs: task, then group, then job).
func applyJobExtras(d *decoder, content *hcl.BodyContent, rv reflect.Value) hcl.Diagnostics {
	job := rv.Addr().Interface().(*api.Job)
	var diags hcl.Diagnostics
	for _, b := range content.Blocks {
		if b.Type != "task" {
			continue
		}
		task := &api.Task{}
		diags = append(diags, d.decodeBlock(b, reflect.ValueOf(task).Elem())...)
		job.TaskGroups = append(job.TaskGroups, &api.TaskGroup{Name: new(task.Name), Tasks: []*api.Task{task}})
	}
	vault, dd := d.decodeVaultBlock(content)
	diags = append(diags, dd...)
	for _, tg := range job.TaskGroups {
		if tg != nil {
			inheritVault(tg.Tasks, vault)
		}
	}
	return diags
}

// applyGroupVault gives the group's `vault` block to each of its tasks
// that has none.
func applyGroupVault(d *decoder, content *hcl.BodyContent, rv reflect.Value) hcl.Diagnostics {
	tg := rv.Addr().Interface().(*api.TaskGroup)
	vault, diags := d.decodeVaultBlock(content)
	inheritVault(tg.Tasks, vault)
	return diags
}

// decodeVaultBlock decodes the at most one `vault` block of content (nil
// when there is none).
func (d *decoder) decodeVaultBlock(content *hcl.BodyContent) (*api.Vault, hcl.Diagnostics) {
	var blocks hcl.Blocks
	for _, b := range content.Blocks {
		if b.Type == vaultBlock.Type {
			blocks = append(blocks, b)
		}
	}
	if len(blocks) == 0 {
		return nil, nil
	}
	var diags hcl.Diagnostics
	for _, extra := range blocks[1:] {
		diags = append(diags, duplicateBlock(vaultBlock.Type, extra))
	}
	vault := &api.Vault{}
	return vault, append(diags, d.decodeBlock(blocks[0], reflect.ValueOf(vault).Elem())...)
}

// inheritVault sets a copy of vault on every task without a vault block.
// The whole block is inherited, not merged field by field: a task that has
// its own block keeps exactly that block.
func inheritVault(tasks []*api.Task, vault *api.Vault) {
	if vault == nil {
		return
	}
	for _, t := range tasks {
		if t != nil && t.Vault == nil {
			cp := *vault
			cp.Policies = append([]string(nil), vault.Policies...)
			t.Vault = &cp
		}
	}
}

// applyConstraint applies the shorthand keys, then the default operator.
func applyConstraint(d *decoder, content *hcl.BodyContent, rv reflect.Value) hcl.Diagnostics {
	c := rv.Addr().Interface().(*api.Constraint)
	diags := d.applyShorthand(content, constraintShorthands, &c.LTarget, &c.RTarget, &c.Operand)
	if c.Operand == "" {
		c.Operand = defaultOperator
	}
	return diags
}

// applyAffinity applies the shorthand keys, then the default operator and
// weight.
func applyAffinity(d *decoder, content *hcl.BodyContent, rv reflect.Value) hcl.Diagnostics {
	a := rv.Addr().Interface().(*api.Affinity)
	diags := d.applyShorthand(content, affinityShorthands, &a.LTarget, &a.RTarget, &a.Operand)
	if a.Operand == "" {
		a.Operand = defaultOperator
	}
	if a.Weight == nil {
		a.Weight = new(defaultAffinityWeight)
	}
	return diags
}

// applyShorthand applies at most one shorthand key from keys:
//   - distinct_hosts = b     → Operand "distinct_hosts", RTarget "true" or "false":
//     Nomad documents it as the compact form of `operator = "distinct_hosts"`
//     with `value = "true"`, and "false" turns the constraint off
//   - distinct_property = p  → Operand "distinct_property", LTarget p (value stays the limit)
//   - other keys = v         → Operand <key>, RTarget v (attribute stays LTarget)
//
// Combining shorthands, or a shorthand with `operator`, is an error.
func (d *decoder) applyShorthand(content *hcl.BodyContent, keys []string, lt, rt, op *string) hcl.Diagnostics {
	var used []*hcl.Attribute
	for _, k := range keys {
		if a, ok := content.Attributes[k]; ok {
			used = append(used, a)
		}
	}
	if len(used) == 0 {
		return nil
	}
	sort.Slice(used, func(i, j int) bool { return used[i].NameRange.Start.Byte < used[j].NameRange.Start.Byte })
	if len(used) > 1 {
		return hcl.Diagnostics{errDiag(used[1].NameRange.Ptr(), "Conflicting shorthands",
			fmt.Sprintf("Only one of %s may be set in one block.", strings.Join(keys, ", ")))}
	}
	a := used[0]
	if opAttr, ok := content.Attributes["operator"]; ok {
		return hcl.Diagnostics{errDiag(opAttr.NameRange.Ptr(), "Conflicting operator",
			fmt.Sprintf("\"operator\" cannot be combined with the %q shorthand.", a.Name))}
	}
	val, diags := evalExpr(a.Expr, d.ctx)
	if diags.HasErrors() {
		return diags
	}
	if a.Name == "distinct_hosts" {
		var on bool
		diags = append(diags, assign(val, reflect.ValueOf(&on).Elem(), a.Name, a.Expr.Range())...)
		*op, *rt = a.Name, strconv.FormatBool(on)
		return diags
	}
	var s string
	diags = append(diags, assign(val, reflect.ValueOf(&s).Elem(), a.Name, a.Expr.Range())...)
	*op = a.Name
	if a.Name == "distinct_property" {
		*lt = s
	} else {
		*rt = s
	}
	return diags
}

// normalizePorts moves ports with a static value from DynamicPorts to
// ReservedPorts in every group and task network, as Nomad's parser does.
func normalizePorts(job *api.Job) {
	for _, tg := range job.TaskGroups {
		if tg == nil {
			continue
		}
		normalizeNetworks(tg.Networks)
		for _, t := range tg.Tasks {
			if t != nil && t.Resources != nil {
				normalizeNetworks(t.Resources.Networks)
			}
		}
	}
}

func normalizeNetworks(nets []*api.NetworkResource) {
	for _, n := range nets {
		if n == nil {
			continue
		}
		var dynamic []api.Port
		for _, p := range n.DynamicPorts {
			if p.Value > 0 {
				n.ReservedPorts = append(n.ReservedPorts, p)
			} else {
				dynamic = append(dynamic, p)
			}
		}
		n.DynamicPorts = dynamic
	}
}

// normalizeIdentities moves each task's first `identity` block without a
// name (or named "default") from Identities to Identity, the task's default
// identity, as Nomad's parser does. Named blocks stay in Identities; a
// second unnamed block stays there too and the server rejects it.
func normalizeIdentities(job *api.Job) {
	for _, tg := range job.TaskGroups {
		if tg == nil {
			continue
		}
		for _, t := range tg.Tasks {
			if t == nil || t.Identity != nil {
				continue
			}
			for i, wi := range t.Identities {
				if wi != nil && (wi.Name == "" || wi.Name == "default") {
					t.Identity = wi
					t.Identities = append(t.Identities[:i:i], t.Identities[i+1:]...)
					if len(t.Identities) == 0 {
						t.Identities = nil
					}
					break
				}
			}
		}
	}
}
