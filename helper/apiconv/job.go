package apiconv

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"unicode"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad/structs"
)

// ServiceProviderNomad is the service provider Drover implements. Services
// that name no provider get it (Nomad would default them to Consul, which
// Drover does not integrate with).
const ServiceProviderNomad = "nomad"

// JobFromAPI converts a submitted job into a canonical structs.Job. It calls
// j.Canonicalize() first (which mutates j: defaults, the default update block
// of system jobs, job-level update/reschedule/migrate merged into groups),
// converts by field name, then calls structs.Job.Canonicalize. Server-set
// fields the client sent (Version, Status, indexes, ...) are copied as they
// are; the register endpoint overwrites them.
//
// Nothing is accepted and then not done: an api field that was set but
// has no counterpart in structs (a block Drover does not carry out) makes
// the error a *structs.ValidationError naming each such block and why, e.g.
//
//	group "web": task "x": artifact: artifacts are not fetched by Drover yet
//
// and the job returned is converted without them (for the caller to
// report its other problems too; it must not be run). warnings lists only what changes nothing at run
// time (inertAPIFields, e.g. the ui block). The error also reports input
// that cannot be converted at all (null groups or tasks); the result still
// has to pass Validate.
func JobFromAPI(j *api.Job) (job *structs.Job, warnings []string, err error) {
	if j == nil {
		return nil, nil, errors.New("missing job")
	}
	if err := checkNulls(j); err != nil {
		return nil, nil, err
	}
	dropZeroVaultGrace(j)
	refused, warnings := unsupportedFields(j)
	refused = append(refused, refusedServiceProviders(j)...)
	refused = append(refused, refusedVolumeTypes(j)...)
	if len(refused) > 0 {
		// The job is still converted, without the refused blocks, so that
		// the caller can report its other problems in the same answer.
		warnings, err = nil, &structs.ValidationError{Problems: refused}
	}
	warnings = append(warnings, defaultServiceProviders(j)...)

	defer func() {
		if r := recover(); r != nil {
			job, warnings, err = nil, nil, errors.Join(err, fmt.Errorf("invalid job: %v", r))
		}
	}()
	explicitStagger := staggerSetByUser(j)
	j.Canonicalize()
	job = convertInto[structs.Job](j)
	job.Canonicalize()
	for _, tg := range job.TaskGroups {
		if tg.Update != nil && !explicitStagger[tg.Name] {
			tg.Update.Stagger = 0
		}
	}
	if j.Update == nil || j.Update.Stagger == nil {
		job.Update.Stagger = 0
	}
	return job, warnings, err
}

// staggerSetByUser reports, per group name, whether the submitted job set
// update.stagger for it (at group or job level). api.Job.Canonicalize fills
// a default stagger in; Drover honours stagger only when it is set
// explicitly, so the defaulted value is cleared after canonicalization.
func staggerSetByUser(j *api.Job) map[string]bool {
	jobLevel := j.Update != nil && j.Update.Stagger != nil
	out := map[string]bool{}
	for _, tg := range j.TaskGroups {
		if tg == nil || tg.Name == nil {
			continue
		}
		out[*tg.Name] = jobLevel || (tg.Update != nil && tg.Update.Stagger != nil)
	}
	return out
}

// dropZeroVaultGrace clears template vault_grace values of 0: what
// api.Template.Canonicalize fills in, and what a job read back carries.
// Only a grace that asks for something is refused.
func dropZeroVaultGrace(j *api.Job) {
	for _, tg := range j.TaskGroups {
		for _, t := range tg.Tasks {
			for _, tmpl := range t.Templates {
				if tmpl != nil && tmpl.VaultGrace != nil && *tmpl.VaultGrace == 0 {
					tmpl.VaultGrace = nil
				}
			}
		}
	}
}

// checkNulls rejects JSON nulls inside lists, which api.Job.Canonicalize
// would dereference.
func checkNulls(j *api.Job) error {
	for i, tg := range j.TaskGroups {
		if tg == nil {
			return fmt.Errorf("task group %d is null", i)
		}
		for k, t := range tg.Tasks {
			if t == nil {
				return fmt.Errorf("task group %q: task %d is null", deref(tg.Name), k)
			}
			for n, tmpl := range t.Templates {
				if tmpl == nil {
					return fmt.Errorf("task group %q: task %q: template %d is null", deref(tg.Name), t.Name, n)
				}
			}
			for n, s := range t.Services {
				if s == nil {
					return fmt.Errorf("task group %q: task %q: service %d is null", deref(tg.Name), t.Name, n)
				}
			}
		}
		for n, s := range tg.Services {
			if s == nil {
				return fmt.Errorf("task group %q: service %d is null", deref(tg.Name), n)
			}
		}
		for n, nw := range tg.Networks {
			if nw == nil {
				return fmt.Errorf("task group %q: network %d is null", deref(tg.Name), n)
			}
		}
	}
	return nil
}

// visitServices calls visit for every service of j with its message
// prefix (group "g": [task "t": ]).
func visitServices(j *api.Job, visit func(prefix string, s *api.Service)) {
	for _, tg := range j.TaskGroups {
		gp := fmt.Sprintf("group %q: ", deref(tg.Name))
		for _, s := range tg.Services {
			visit(gp, s)
		}
		for _, t := range tg.Tasks {
			for _, s := range t.Services {
				visit(fmt.Sprintf("%stask %q: ", gp, t.Name), s)
			}
		}
	}
}

// refusedServiceProviders refuses services of a provider Drover does not
// have (Consul): they would be neither registered nor checked.
func refusedServiceProviders(j *api.Job) []string {
	var out []string
	visitServices(j, func(prefix string, s *api.Service) {
		if s.Provider != "" && s.Provider != ServiceProviderNomad {
			out = append(out, fmt.Sprintf("%sservice %q: provider %q: this cluster has no Consul integration; use provider = %q",
				prefix, s.Name, s.Provider, ServiceProviderNomad))
		}
	})
	return out
}

// refusedVolumeTypes refuses CSI volumes: Drover has no CSI plugins to
// claim and mount them.
func refusedVolumeTypes(j *api.Job) []string {
	var out []string
	for _, tg := range j.TaskGroups {
		names := make([]string, 0, len(tg.Volumes))
		for name := range tg.Volumes {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if v := tg.Volumes[name]; v != nil && v.Type == structs.VolumeTypeCSI {
				out = append(out, fmt.Sprintf("group %q: volume %q: CSI volumes are not supported by Drover", deref(tg.Name), name))
			}
		}
	}
	return out
}

// defaultServiceProviders sets the provider of services that name none to
// "nomad", Drover's own catalog, and warns of each: Nomad would have
// registered it in Consul.
func defaultServiceProviders(j *api.Job) []string {
	var out []string
	visitServices(j, func(prefix string, s *api.Service) {
		if s.Provider == "" {
			s.Provider = ServiceProviderNomad
			out = append(out, fmt.Sprintf("%sservice %q: no provider: registered in Drover's native service catalog (provider %q); Nomad would have used Consul",
				prefix, s.Name, ServiceProviderNomad))
		}
	})
	return out
}

// ignoredAPIFields are api fields that Drover drops without a warning:
// server-set or deprecated fields, and job-level blocks that
// api.Job.Canonicalize merges into every group (where Drover keeps them).
var ignoredAPIFields = map[string]bool{
	"Job.Reschedule": true, "Job.Migrate": true,
	"Job.ConsulNamespace": true, "Job.VaultNamespace": true, "Job.NomadTokenID": true,
	"LogConfig.Enabled": true,
	// Set by the server on a stored scaling policy; a job read back and
	// submitted again carries them.
	"ScalingPolicy.ID": true, "ScalingPolicy.Namespace": true, "ScalingPolicy.Target": true,
	"ScalingPolicy.CreateIndex": true, "ScalingPolicy.ModifyIndex": true,
}

// inertAPIFields are api fields Drover does not keep whose absence changes
// nothing at run time: submitting them gets a warning, not a refusal.
var inertAPIFields = map[string]string{
	"Job.UI":                    "it is shown by Nomad's web UI only",
	"ServiceCheck.Notes":        "notes are Consul metadata",
	"Service.EnableTagOverride": "it is a Consul setting",
	"Resources.IOPS":            "it is deprecated and has no effect in Nomad either",
}

// refusalReasons say why a set api field that Drover does not keep is
// refused; fields not listed get "is not supported by Drover yet".
var refusalReasons = map[string]string{
	"Template.VaultGrace":                 "vault_grace is for Vault tokens: this cluster has no Vault integration",
	"Task.Vault":                          "this cluster has no Vault integration",
	"Task.Consul":                         "this cluster has no Consul integration",
	"TaskGroup.Consul":                    "this cluster has no Consul integration",
	"VolumeRequest.Sticky":                "sticky volume claims are not supported by Drover yet",
	"VolumeRequest.AccessMode":            "a group's access mode is not supported by Drover yet (a host volume is mounted as its read_only says)",
	"VolumeRequest.AttachmentMode":        "a group's attachment mode is not supported by Drover yet (host volumes are file systems)",
	"VolumeRequest.MountOptions":          "mount options are for CSI volumes, which Drover does not have",
	"Task.CSIPluginConfig":                "CSI plugins are not supported by Drover",
	"Task.Secrets":                        "secret providers are not supported by Drover yet",
	"Task.Actions":                        "task actions are not supported by Drover yet",
	"Task.Schedule":                       "task schedules are not supported by Drover",
	"Task.ScalingPolicies":                "vertical scaling policies are not supported by Drover",
	"Resources.Devices":                   "device plugins are not supported by Drover",
	"Resources.NUMA":                      "NUMA-aware placement is not supported by Drover",
	"Resources.SecretsMB":                 "sizing the secrets directory is not supported by Drover yet",
	"Port.IgnoreCollision":                "Drover always checks static ports for collisions",
	"Job.Multiregion":                     "multiregion deployments are not supported by Drover",
	"Service.Connect":                     "Consul Connect needs Consul: this cluster has no Consul integration",
	"Service.Identity":                    "service identities are for Consul: this cluster has no Consul integration",
	"ServiceCheck.Expose":                 "exposed checks need Consul Connect: this cluster has no Consul integration",
	"ServiceCheck.GRPCService":            "gRPC checks need Consul: this cluster has no Consul integration",
	"ServiceCheck.GRPCUseTLS":             "gRPC checks need Consul: this cluster has no Consul integration",
	"WorkloadIdentity.ExtraClaims":        "extra claims are not signed into Drover's workload identities yet",
	"WorkloadIdentity.ServiceName":        "service identities are for Consul: this cluster has no Consul integration",
	"ServiceCheck.SuccessBeforePassing":   "checks pass or fail on each result in Drover",
	"ServiceCheck.FailuresBeforeCritical": "checks pass or fail on each result in Drover",
	"ServiceCheck.FailuresBeforeWarning":  "checks pass or fail on each result in Drover",
	"ServiceCheck.TLSSkipVerify":          "checks always verify TLS in Drover",
	"ServiceCheck.TLSServerName":          "checks use the address's own name for TLS in Drover",
}

// unsupportedFields walks a submitted job and describes every non-empty api
// field that has no counterpart in structs, in field order: refused (the
// job is not accepted) or, for inertAPIFields, warned about.
func unsupportedFields(j *api.Job) (refused, warnings []string) {
	var found []foundField
	walkUnsupported("", reflect.ValueOf(j).Elem(), reflect.TypeFor[structs.Job](), &found)
	for _, f := range found {
		name, _ := specName(f.field)
		if why, inert := inertAPIFields[f.key]; inert {
			warnings = append(warnings, fmt.Sprintf("%s%s is not kept by Drover: %s", f.prefix, name, why))
			continue
		}
		why := refusalReasons[f.key]
		if why == "" {
			why = "it is not supported by Drover yet"
		}
		refused = append(refused, fmt.Sprintf("%s%s: %s", f.prefix, name, why))
	}
	return refused, warnings
}

// foundField is a set api field without a structs counterpart; key is
// "<api type>.<field>".
type foundField struct {
	prefix, key string
	field       reflect.StructField
}

func walkUnsupported(prefix string, av reflect.Value, st reflect.Type, out *[]foundField) {
	at := av.Type()
	for i := range at.NumField() {
		f := at.Field(i)
		fv := av.Field(i)
		if !f.IsExported() || ignoredAPIFields[at.Name()+"."+f.Name] || isEmpty(fv) {
			continue
		}
		sf, ok := st.FieldByName(f.Name)
		if !ok {
			*out = append(*out, foundField{prefix: prefix, key: at.Name() + "." + f.Name, field: f})
			continue
		}
		walkNested(prefix, fv, sf.Type, out)
	}
}

// walkNested descends into a struct, pointer to struct, or list or map of
// them (in key order).
func walkNested(prefix string, v reflect.Value, st reflect.Type, out *[]foundField) {
	for st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch {
	case v.Kind() == reflect.Struct && st.Kind() == reflect.Struct && hasExportedFields(v.Type()):
		walkUnsupported(prefix+elementPrefix(v), v, st, out)
	case v.Kind() == reflect.Slice && st.Kind() == reflect.Slice:
		for i := range v.Len() {
			walkNested(prefix, v.Index(i), st.Elem(), out)
		}
	case v.Kind() == reflect.Map && st.Kind() == reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			walkNested(prefix, v.MapIndex(k), st.Elem(), out)
		}
	}
}

// elementPrefix names the blocks that carry a name, for warning messages.
func elementPrefix(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case api.TaskGroup:
		return fmt.Sprintf("group %q: ", deref(x.Name))
	case api.Task:
		return fmt.Sprintf("task %q: ", x.Name)
	case api.Service:
		return fmt.Sprintf("service %q: ", x.Name)
	case api.ServiceCheck:
		return fmt.Sprintf("check %q: ", x.Name)
	case api.VolumeRequest:
		return fmt.Sprintf("volume %q: ", x.Name)
	}
	return ""
}

// specName returns the jobspec (HCL) name of an api field and whether it is
// a block.
func specName(f reflect.StructField) (name string, block bool) {
	if tag, ok := f.Tag.Lookup("hcl"); ok {
		parts := strings.Split(tag, ",")
		if parts[0] != "" {
			return parts[0], len(parts) > 1 && parts[1] == "block"
		}
	}
	if tag, ok := f.Tag.Lookup("mapstructure"); ok && tag != "" {
		return strings.Split(tag, ",")[0], false
	}
	return snakeCase(f.Name), false
}

func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 && !unicode.IsUpper(rune(s[i-1])) {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isEmpty reports whether v holds nothing a user wrote: a zero value, a nil
// pointer, or an empty map or list.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Map, reflect.Slice:
		return v.Len() == 0
	}
	return v.IsZero()
}

// JobToAPI converts a stored job for API readers. Every pointer field the
// CLI dereferences (ID, Name, Type, Priority, Namespace, Status, SubmitTime,
// Version, Stable, Stop, Region, NodePool and the indexes) is non-nil.
func JobToAPI(j *structs.Job) *api.Job {
	out := convertInto[api.Job](j)
	if out == nil {
		return nil
	}
	out.ConsulNamespace = new("")
	out.VaultNamespace = new("")
	out.NomadTokenID = new("")
	// The payload is stored compressed; clients and users get it as it
	// was dispatched. A stored form that cannot be decoded is left out
	// rather than handed on as if it were the payload.
	out.Payload = nil
	if payload, err := j.DecodedPayload(); err == nil && len(payload) > 0 {
		out.Payload = payload
	}
	return out
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
