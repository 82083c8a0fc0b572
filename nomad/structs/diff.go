package structs

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Diff types, as `job plan` and `job history -p` expect them.
const (
	DiffTypeNone    = "None"
	DiffTypeAdded   = "Added"
	DiffTypeDeleted = "Deleted"
	DiffTypeEdited  = "Edited"
)

// Task diff annotations: what a change does to the task's allocations.
const (
	AnnotationForcesCreate            = "forces create"
	AnnotationForcesDestroy           = "forces destroy"
	AnnotationForcesInplaceUpdate     = "forces in-place update"
	AnnotationForcesDestructiveUpdate = "forces create/destroy update"
)

// Update types returned by TaskGroup.UpdateType.
const (
	UpdateTypeNone        = "none"
	UpdateTypeInPlace     = "in-place"
	UpdateTypeDestructive = "destructive"
)

// JobDiff is the difference between two versions of a job. It mirrors
// api.JobDiff field by field.
type JobDiff struct {
	Type       string
	ID         string
	Fields     []*FieldDiff
	Objects    []*ObjectDiff
	TaskGroups []*TaskGroupDiff
}

// TaskGroupDiff is the difference between two versions of a task group.
// Updates (counts per kind of change, e.g. "create/destroy update") is left
// nil by Diff; the plan endpoint fills it from the scheduler's annotations.
type TaskGroupDiff struct {
	Type    string
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
	Tasks   []*TaskDiff
	Updates map[string]uint64
}

// TaskDiff is the difference between two versions of a task. Annotations
// say how the change reaches the task's allocations (Annotation* constants).
type TaskDiff struct {
	Type        string
	Name        string
	Fields      []*FieldDiff
	Objects     []*ObjectDiff
	Annotations []string
}

// FieldDiff is the change of one primitive value, rendered as strings.
type FieldDiff struct {
	Type        string
	Name        string
	Old, New    string
	Annotations []string
}

// ObjectDiff is the change of a nested block (update, resources, a
// constraint, the driver config, ...).
type ObjectDiff struct {
	Type    string
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
}

// jobDiffSkip lists the Job fields Diff does not render as fields: the ID
// (JobDiff.ID), the task groups (TaskGroupDiffs) and server-set fields.
var jobDiffSkip = map[string]bool{
	"ID": true, "TaskGroups": true,
	"Status": true, "StatusDescription": true, "Stable": true, "Version": true,
	"SubmitTime": true, "CreateIndex": true, "ModifyIndex": true, "JobModifyIndex": true,
	"VersionTag": true,
}

var (
	groupDiffSkip = map[string]bool{"Name": true, "Tasks": true}
	taskDiffSkip  = map[string]bool{"Name": true}
)

// Diff returns the changes from j (the old version) to other (the new one).
// A nil j gives an Added diff, a nil other a Deleted one. With contextual,
// unchanged fields, objects, groups and tasks are included with Type "None";
// otherwise only changes are. Server-set fields are ignored; Stop is not.
//
// Primitive fields use their Go field names ("Priority"); maps become one
// field per key ("Meta[owner]", "Env[PORT]"); string lists (Datacenters, Tags)
// become an object of per-element fields; nested blocks become objects
// ("Update", "RestartPolicy", "Resources", "Constraint", "Network",
// "Service", "Check"); the driver config becomes a "Config" object with
// dotted keys ("mount[0].target"). Durations read as "30s".
func (j *Job) Diff(other *Job, contextual bool) (*JobDiff, error) {
	switch {
	case j == nil && other == nil:
		return nil, errors.New("structs: cannot diff two nil jobs")
	case j != nil && other != nil && j.ID != other.ID:
		return nil, fmt.Errorf("structs: cannot diff jobs with different IDs %q and %q", j.ID, other.ID)
	}
	df := differ{contextual: contextual}
	var oldV, newV reflect.Value
	var oldGroups, newGroups []*TaskGroup
	d := &JobDiff{}
	if j != nil {
		d.ID, oldV, oldGroups = j.ID, reflect.ValueOf(j), j.TaskGroups
	}
	if other != nil {
		d.ID, newV, newGroups = other.ID, reflect.ValueOf(other), other.TaskGroups
	}
	od := df.object("Job", oldV, newV, jobDiffSkip)
	d.Type, d.Fields, d.Objects = od.Type, od.Fields, od.Objects
	d.TaskGroups = df.taskGroups(oldGroups, newGroups)
	if d.Type == DiffTypeNone && slices.ContainsFunc(d.TaskGroups, func(g *TaskGroupDiff) bool {
		return g.Type != DiffTypeNone
	}) {
		d.Type = DiffTypeEdited
	}
	return d, nil
}

// UpdateType reports how allocations of tg (the running version) must change
// to become other (the new version):
//
//   - "destructive": replace the allocation. The group's networks,
//     volumes or ephemeral disk changed, a task was added or removed, or a task's
//     Driver, User, Config, Env, Resources, KillSignal, Lifecycle, Leader or
//     VolumeMounts changed.
//   - "in-place": update the allocation where it runs. Anything else changed
//     (meta, services, restart policy, update block, constraints, affinities,
//     spreads, kill timeout, log config, shutdown delay, ...).
//   - "none": nothing but the name and count differ. Count is not an update:
//     the reconciler places or stops allocations for it.
//
// A nil group on either side (a group added or removed) is destructive.
func (tg *TaskGroup) UpdateType(other *TaskGroup) string {
	if tg == nil || other == nil {
		if tg == other {
			return UpdateTypeNone
		}
		return UpdateTypeDestructive
	}
	if !equalSpec(tg.Networks, other.Networks) || !equalSpec(tg.EphemeralDisk, other.EphemeralDisk) ||
		!equalSpec(tg.Volumes, other.Volumes) || !sameTaskNames(tg.Tasks, other.Tasks) {
		return UpdateTypeDestructive
	}
	result := UpdateTypeNone
	for _, t := range tg.Tasks {
		if t == nil {
			continue
		}
		switch taskUpdateType(t, other.LookupTask(t.Name)) {
		case UpdateTypeDestructive:
			return UpdateTypeDestructive
		case UpdateTypeInPlace:
			result = UpdateTypeInPlace
		}
	}
	a, b := *tg, *other
	a.Name, b.Name = "", ""
	a.Count, b.Count = 0, 0
	a.Tasks, b.Tasks = nil, nil
	if !equalSpec(&a, &b) {
		result = UpdateTypeInPlace
	}
	return result
}

// taskUpdateType is UpdateType for one task present in both versions.
func taskUpdateType(old, new *Task) string {
	if old == nil || new == nil {
		return UpdateTypeDestructive
	}
	if old.Driver != new.Driver || old.User != new.User || old.KillSignal != new.KillSignal ||
		old.Leader != new.Leader || !equalSpec(old.Config, new.Config) ||
		!equalSpec(old.Env, new.Env) || !equalSpec(old.Resources, new.Resources) ||
		!equalSpec(old.Lifecycle, new.Lifecycle) || !equalSpec(old.VolumeMounts, new.VolumeMounts) ||
		!equalSpec(old.Identity, new.Identity) || !equalSpec(old.Identities, new.Identities) ||
		!equalSpec(old.Templates, new.Templates) ||
		!equalSpec(old.Artifacts, new.Artifacts) {
		return UpdateTypeDestructive
	}
	if !equalSpec(old, new) {
		return UpdateTypeInPlace
	}
	return UpdateTypeNone
}

func sameTaskNames(a, b []*Task) bool {
	names := func(ts []*Task) []string {
		var out []string
		for _, t := range ts {
			if t != nil {
				out = append(out, t.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(names(a), names(b))
}

// equalSpec is specEqual for plain Go values.
func equalSpec(a, b any) bool { return specEqual(reflect.ValueOf(a), reflect.ValueOf(b)) }

// differ builds diffs; contextual keeps unchanged parts with Type "None".
type differ struct{ contextual bool }

// keep reports whether a child of the given diff type belongs in the output.
func (df differ) keep(typ string) bool { return df.contextual || typ != DiffTypeNone }

func (df differ) taskGroups(old, new []*TaskGroup) []*TaskGroupDiff {
	var out []*TaskGroupDiff
	for _, name := range unionNames(old, new, func(g *TaskGroup) string { return g.Name }) {
		o, n := findNamed(old, name, groupName), findNamed(new, name, groupName)
		od := df.object("TaskGroup", ptrValue(o), ptrValue(n), groupDiffSkip)
		gd := &TaskGroupDiff{Type: od.Type, Name: name, Fields: od.Fields, Objects: od.Objects}
		destructive := o != nil && n != nil && o.UpdateType(n) == UpdateTypeDestructive
		gd.Tasks = df.tasks(tasksOf(o), tasksOf(n), destructive)
		if gd.Type == DiffTypeNone && slices.ContainsFunc(gd.Tasks, func(t *TaskDiff) bool {
			return t.Type != DiffTypeNone
		}) {
			gd.Type = DiffTypeEdited
		}
		if df.keep(gd.Type) {
			out = append(out, gd)
		}
	}
	return out
}

// tasks diffs the tasks of a group; groupDestructive marks every edited task
// as destructively updated (the group's own change replaces allocations).
func (df differ) tasks(old, new []*Task, groupDestructive bool) []*TaskDiff {
	var out []*TaskDiff
	for _, name := range unionNames(old, new, func(t *Task) string { return t.Name }) {
		o, n := findNamed(old, name, taskName), findNamed(new, name, taskName)
		od := df.object("Task", ptrValue(o), ptrValue(n), taskDiffSkip)
		td := &TaskDiff{Type: od.Type, Name: name, Fields: od.Fields, Objects: od.Objects}
		switch td.Type {
		case DiffTypeAdded:
			td.Annotations = []string{AnnotationForcesCreate}
		case DiffTypeDeleted:
			td.Annotations = []string{AnnotationForcesDestroy}
		case DiffTypeEdited:
			if groupDestructive || taskUpdateType(o, n) == UpdateTypeDestructive {
				td.Annotations = []string{AnnotationForcesDestructiveUpdate}
			} else {
				td.Annotations = []string{AnnotationForcesInplaceUpdate}
			}
		}
		if df.keep(td.Type) {
			out = append(out, td)
		}
	}
	return out
}

func groupName(g *TaskGroup) string { return g.Name }
func taskName(t *Task) string       { return t.Name }

func tasksOf(g *TaskGroup) []*Task {
	if g == nil {
		return nil
	}
	return g.Tasks
}

// unionNames returns the sorted names of the non-nil elements of a and b.
func unionNames[T any](a, b []*T, name func(*T) string) []string {
	set := map[string]bool{}
	for _, l := range [][]*T{a, b} {
		for _, x := range l {
			if x != nil {
				set[name(x)] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func findNamed[T any](l []*T, n string, name func(*T) string) *T {
	for _, x := range l {
		if x != nil && name(x) == n {
			return x
		}
	}
	return nil
}

// ptrValue returns the reflect.Value of p, or the invalid Value for nil.
func ptrValue[T any](p *T) reflect.Value {
	if p == nil {
		return reflect.Value{}
	}
	return reflect.ValueOf(p)
}

// object diffs two structs (or pointers to structs) of the same type. An
// invalid or nil value is absent. It returns nil when both are absent.
func (df differ) object(name string, old, new reflect.Value, skip map[string]bool) *ObjectDiff {
	old, new = deref(old), deref(new)
	if !old.IsValid() && !new.IsValid() {
		return nil
	}
	var t reflect.Type
	if old.IsValid() {
		t = old.Type()
	} else {
		t = new.Type()
	}
	od := &ObjectDiff{Name: name}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || skip[f.Name] {
			continue
		}
		df.member(od, f, fieldOf(old, i), fieldOf(new, i))
	}
	sort.SliceStable(od.Fields, func(a, b int) bool { return od.Fields[a].Name < od.Fields[b].Name })
	sort.SliceStable(od.Objects, func(a, b int) bool { return od.Objects[a].Name < od.Objects[b].Name })
	od.Type = presenceType(old.IsValid(), new.IsValid(), od)
	return od
}

// presenceType is Added or Deleted for a one-sided object, otherwise Edited
// when any child changed and None when none did.
func presenceType(oldOK, newOK bool, od *ObjectDiff) string {
	switch {
	case !oldOK:
		return DiffTypeAdded
	case !newOK:
		return DiffTypeDeleted
	}
	for _, f := range od.Fields {
		if f.Type != DiffTypeNone {
			return DiffTypeEdited
		}
	}
	for _, o := range od.Objects {
		if o.Type != DiffTypeNone {
			return DiffTypeEdited
		}
	}
	return DiffTypeNone
}

func (df differ) addField(od *ObjectDiff, f *FieldDiff) {
	if f != nil && df.keep(f.Type) {
		od.Fields = append(od.Fields, f)
	}
}

func (df differ) addObject(od *ObjectDiff, o *ObjectDiff) {
	if o != nil && df.keep(o.Type) {
		od.Objects = append(od.Objects, o)
	}
}

// member diffs one struct field into od. o and n are invalid when the
// enclosing object is absent on that side.
func (df differ) member(od *ObjectDiff, f reflect.StructField, o, n reflect.Value) {
	ft := f.Type
	switch {
	case isScalar(ft) || (ft.Kind() == reflect.Pointer && isScalar(ft.Elem())):
		df.addField(od, df.field(f.Name, scalarOf(o), scalarOf(n)))
	case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Interface:
		df.addObject(od, df.flatObject(f.Name, o, n))
	case ft.Kind() == reflect.Map:
		om, nm := mapEntries(o), mapEntries(n)
		for _, k := range unionKeys(om, nm) {
			df.addField(od, df.field(fmt.Sprintf("%s[%s]", f.Name, k), lookup(om, k), lookup(nm, k)))
		}
	case ft.Kind() == reflect.Slice && isScalar(ft.Elem()):
		df.addObject(od, df.stringSet(f.Name, o, n))
	case ft.Kind() == reflect.Slice:
		for _, pair := range matchElems(o, n) {
			df.addObject(od, df.object(elemName(f.Name), pair[0], pair[1], nil))
		}
	case ft.Kind() == reflect.Struct || (ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct):
		df.addObject(od, df.object(f.Name, o, n, nil))
	}
}

// optional is a rendered value that may be absent.
type optional struct {
	s  string
	ok bool
}

// field diffs one rendered value. An absent side counts as "" for the
// Added/Deleted decision, as in Nomad: "" → "x" is Added, "x" → "" Deleted.
func (df differ) field(name string, o, n optional) *FieldDiff {
	if !o.ok && !n.ok {
		return nil
	}
	fd := &FieldDiff{Name: name, Old: o.s, New: n.s}
	switch {
	case o.s == n.s && o.ok && n.ok:
		if o.s == "" && !df.contextual {
			return nil
		}
		fd.Type = DiffTypeNone
	case o.s == n.s: // both "" with one side absent
		return nil
	case o.s == "":
		fd.Type = DiffTypeAdded
	case n.s == "":
		fd.Type = DiffTypeDeleted
	default:
		fd.Type = DiffTypeEdited
	}
	return fd
}

// flatObject diffs two map[string]any values (driver configs) as an object
// whose fields are the flattened dotted keys.
func (df differ) flatObject(name string, o, n reflect.Value) *ObjectDiff {
	om, nm := map[string]string{}, map[string]string{}
	flatten("", o, om)
	flatten("", n, nm)
	return df.keyedObject(name, om, nm)
}

// stringSet diffs two slices of scalars as a multiset: each element is a
// field named after the slice.
func (df differ) stringSet(name string, o, n reflect.Value) *ObjectDiff {
	count := func(v reflect.Value) map[string]int {
		m := map[string]int{}
		if v.IsValid() {
			for i := range v.Len() {
				m[scalarOf(v.Index(i)).s]++
			}
		}
		return m
	}
	oc, nc := count(o), count(n)
	od := &ObjectDiff{Name: name}
	for _, k := range unionKeys(oc, nc) {
		for i := range max(oc[k], nc[k]) {
			fo, fn := optional{k, i < oc[k]}, optional{k, i < nc[k]}
			var fd *FieldDiff
			switch {
			case fo.ok && fn.ok:
				fd = &FieldDiff{Type: DiffTypeNone, Name: name, Old: k, New: k}
			case fo.ok:
				fd = &FieldDiff{Type: DiffTypeDeleted, Name: name, Old: k}
			default:
				fd = &FieldDiff{Type: DiffTypeAdded, Name: name, New: k}
			}
			df.addField(od, fd)
		}
	}
	return finishKeyed(od, len(oc) > 0, len(nc) > 0)
}

// keyedObject diffs two flat key → value maps as one object.
func (df differ) keyedObject(name string, om, nm map[string]string) *ObjectDiff {
	od := &ObjectDiff{Name: name}
	for _, k := range unionKeys(om, nm) {
		df.addField(od, df.field(k, lookup(om, k), lookup(nm, k)))
	}
	return finishKeyed(od, len(om) > 0, len(nm) > 0)
}

// finishKeyed sets the type of a map- or list-backed object, where an empty
// map or list counts as absent. It returns nil when both sides are empty.
func finishKeyed(od *ObjectDiff, oldOK, newOK bool) *ObjectDiff {
	if !oldOK && !newOK {
		return nil
	}
	od.Type = presenceType(oldOK, newOK, od)
	return od
}

// elemNames names the objects of slices of blocks, in the singular.
var elemNames = map[string]string{
	"Constraints":   "Constraint",
	"Affinities":    "Affinity",
	"Spreads":       "Spread",
	"Networks":      "Network",
	"Services":      "Service",
	"Checks":        "Check",
	"ReservedPorts": "Static Port",
	"DynamicPorts":  "Dynamic Port",
	"Artifacts":     "Artifact",
}

func elemName(field string) string {
	if n, ok := elemNames[field]; ok {
		return n
	}
	return field
}

// matchElems pairs the elements of two slices of structs: services and
// checks by name, ports by label, networks by position, everything else
// (constraints, affinities, spreads) by content, so that an edited
// constraint reads as one deleted and one added. Unmatched elements are
// paired with the invalid Value.
func matchElems(o, n reflect.Value) [][2]reflect.Value {
	ok, nk := keyedElems(o), keyedElems(n)
	var out [][2]reflect.Value
	used := map[string]bool{}
	for _, e := range ok {
		var pair [2]reflect.Value
		pair[0] = e.v
		if m, found := findKey(nk, e.key); found {
			pair[1] = m.v
			used[e.key] = true
		}
		out = append(out, pair)
	}
	for _, e := range nk {
		if !used[e.key] {
			out = append(out, [2]reflect.Value{{}, e.v})
		}
	}
	return out
}

type keyedElem struct {
	key string
	v   reflect.Value
}

func findKey(l []keyedElem, key string) (keyedElem, bool) {
	for _, e := range l {
		if e.key == key {
			return e, true
		}
	}
	return keyedElem{}, false
}

// keyedElems returns the non-nil elements of a slice with unique match keys;
// repeated keys get an occurrence suffix.
func keyedElems(v reflect.Value) []keyedElem {
	if !v.IsValid() {
		return nil
	}
	seen := map[string]int{}
	var out []keyedElem
	for i := range v.Len() {
		e := deref(v.Index(i))
		if !e.IsValid() {
			continue
		}
		k := elemKey(e, i)
		seen[k]++
		if seen[k] > 1 {
			k += "#" + strconv.Itoa(seen[k])
		}
		out = append(out, keyedElem{key: k, v: e})
	}
	return out
}

func elemKey(e reflect.Value, i int) string {
	switch x := e.Interface().(type) {
	case Service:
		return "name=" + x.Name
	case ServiceCheck:
		return "name=" + x.Name
	case Port:
		return "label=" + x.Label
	case NetworkResource:
		return "#" + strconv.Itoa(i)
	}
	m := map[string]string{}
	flatten("", e, m)
	keys := unionKeys(m, nil)
	parts := make([]string, len(keys))
	for j, k := range keys {
		parts[j] = k + "=" + strconv.Quote(m[k])
	}
	return strings.Join(parts, ",")
}

// flatten renders v into out as dotted keys below prefix: map entries as
// "prefix.key", list elements as "prefix[i]", struct fields by name.
func flatten(prefix string, v reflect.Value, out map[string]string) {
	v = deref(v)
	if !v.IsValid() {
		return
	}
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch {
	case isScalar(v.Type()):
		out[prefix] = scalarOf(v).s
	case v.Kind() == reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			flatten(join(fmt.Sprint(iter.Key().Interface())), iter.Value(), out)
		}
	case v.Kind() == reflect.Slice || v.Kind() == reflect.Array:
		for i := range v.Len() {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), v.Index(i), out)
		}
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				flatten(join(v.Type().Field(i).Name), v.Field(i), out)
			}
		}
	default:
		out[prefix] = fmt.Sprint(v.Interface())
	}
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	timeType     = reflect.TypeFor[time.Time]()
)

func isScalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return t == timeType
}

// scalarOf renders a scalar (or pointer to one); absent when v is invalid.
// A nil pointer renders as "".
func scalarOf(v reflect.Value) optional {
	if !v.IsValid() {
		return optional{}
	}
	v = deref(v)
	if !v.IsValid() {
		return optional{ok: true}
	}
	if v.Type() == durationType {
		return optional{time.Duration(v.Int()).String(), true}
	}
	switch v.Kind() {
	case reflect.Bool:
		return optional{strconv.FormatBool(v.Bool()), true}
	case reflect.String:
		return optional{v.String(), true}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return optional{strconv.FormatInt(v.Int(), 10), true}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return optional{strconv.FormatUint(v.Uint(), 10), true}
	case reflect.Float32, reflect.Float64:
		return optional{strconv.FormatFloat(v.Float(), 'f', -1, 64), true}
	}
	return optional{fmt.Sprint(v.Interface()), true}
}

// mapEntries renders a map's values by key; nil when v is invalid.
func mapEntries(v reflect.Value) map[string]string {
	if !v.IsValid() {
		return nil
	}
	m := map[string]string{}
	iter := v.MapRange()
	for iter.Next() {
		val := iter.Value()
		if val.Kind() == reflect.Slice { // map[string][]string (check headers)
			parts := make([]string, val.Len())
			for i := range val.Len() {
				parts[i] = scalarOf(val.Index(i)).s
			}
			m[fmt.Sprint(iter.Key().Interface())] = strings.Join(parts, ", ")
			continue
		}
		m[fmt.Sprint(iter.Key().Interface())] = scalarOf(val).s
	}
	return m
}

func lookup(m map[string]string, k string) optional {
	s, ok := m[k]
	return optional{s, ok}
}

func unionKeys[V any](a, b map[string]V) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// deref follows pointers and interfaces; the result is invalid for nil.
func deref(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}

// fieldOf returns field i of struct v, or the invalid Value when v is.
func fieldOf(v reflect.Value, i int) reflect.Value {
	if !v.IsValid() {
		return reflect.Value{}
	}
	return v.Field(i)
}
