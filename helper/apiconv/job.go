package apiconv

import (
	"errors"
	"fmt"
	"reflect"
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
// warnings lists api fields that were set but that Drover does not keep, one
// sentence each, such as
//
//	group "web": task "x": template blocks are not supported by Drover and were ignored
//
// The error reports input that cannot be converted at all (null groups or
// tasks); the result still has to pass Validate.
func JobFromAPI(j *api.Job) (job *structs.Job, warnings []string, err error) {
	if j == nil {
		return nil, nil, errors.New("missing job")
	}
	if err := checkNulls(j); err != nil {
		return nil, nil, err
	}
	warnings = unsupportedFields(j)
	warnings = append(warnings, defaultServiceProviders(j)...)

	defer func() {
		if r := recover(); r != nil {
			job, warnings, err = nil, nil, fmt.Errorf("invalid job: %v", r)
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
	return job, warnings, nil
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

// defaultServiceProviders sets the provider of services that name none to
// "nomad" and warns about services that ask for Consul.
func defaultServiceProviders(j *api.Job) []string {
	var warnings []string
	visit := func(prefix string, services []*api.Service) {
		for _, s := range services {
			switch s.Provider {
			case "":
				s.Provider = ServiceProviderNomad
			case ServiceProviderNomad:
			default:
				warnings = append(warnings, fmt.Sprintf(
					"%sservice %q: provider %q is not supported by Drover: the service is not registered and its checks do not count towards deployment health",
					prefix, s.Name, s.Provider))
			}
		}
	}
	for _, tg := range j.TaskGroups {
		gp := fmt.Sprintf("group %q: ", deref(tg.Name))
		visit(gp, tg.Services)
		for _, t := range tg.Tasks {
			visit(fmt.Sprintf("%stask %q: ", gp, t.Name), t.Services)
		}
	}
	return warnings
}

// ignoredAPIFields are api fields that Drover drops without a warning:
// server-set or deprecated fields, and job-level blocks that
// api.Job.Canonicalize merges into every group (where Drover keeps them).
var ignoredAPIFields = map[string]bool{
	"Job.Reschedule": true, "Job.Migrate": true,
	"Job.ConsulNamespace": true, "Job.VaultNamespace": true, "Job.NomadTokenID": true,
	"LogConfig.Enabled": true,
}

// unsupportedFields walks a submitted job and describes every non-empty api
// field that has no counterpart in structs, in field order.
func unsupportedFields(j *api.Job) []string {
	var out []string
	walkUnsupported("", reflect.ValueOf(j).Elem(), reflect.TypeFor[structs.Job](), &out)
	return out
}

func walkUnsupported(prefix string, av reflect.Value, st reflect.Type, out *[]string) {
	at := av.Type()
	for i := range at.NumField() {
		f := at.Field(i)
		fv := av.Field(i)
		if !f.IsExported() || ignoredAPIFields[at.Name()+"."+f.Name] || isEmpty(fv) {
			continue
		}
		sf, ok := st.FieldByName(f.Name)
		if !ok {
			*out = append(*out, unsupportedMessage(prefix, f))
			continue
		}
		walkNested(prefix, fv, sf.Type, out)
	}
}

// walkNested descends into a struct, pointer to struct or list of them.
func walkNested(prefix string, v reflect.Value, st reflect.Type, out *[]string) {
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
	}
	return ""
}

// unsupportedMessage describes an ignored field by its jobspec name.
func unsupportedMessage(prefix string, f reflect.StructField) string {
	name, block := specName(f)
	if block {
		return fmt.Sprintf("%s%s blocks are not supported by Drover and were ignored", prefix, name)
	}
	return fmt.Sprintf("%s%s is not supported by Drover and was ignored", prefix, name)
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
