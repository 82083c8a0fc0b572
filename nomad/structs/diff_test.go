package structs

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func fieldNamed(fields []*FieldDiff, name string) *FieldDiff {
	for _, f := range fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

func objectsNamed(objects []*ObjectDiff, name string) []*ObjectDiff {
	var out []*ObjectDiff
	for _, o := range objects {
		if o.Name == name {
			out = append(out, o)
		}
	}
	return out
}

func TestDiff_AddedAndDeleted(t *testing.T) {
	j := testJob()

	added, err := (*Job)(nil).Diff(j, false)
	require.NoError(t, err)
	assert.Equal(t, DiffTypeAdded, added.Type)
	assert.Equal(t, "web", added.ID)
	assert.Equal(t, &FieldDiff{Type: DiffTypeAdded, Name: "Priority", New: "50"}, fieldNamed(added.Fields, "Priority"))
	assert.Nil(t, fieldNamed(added.Fields, "Version"), "server fields are not diffed")
	assert.Nil(t, fieldNamed(added.Fields, "ParentID"), "empty strings are left out")
	require.Len(t, added.TaskGroups, 1)
	assert.Equal(t, DiffTypeAdded, added.TaskGroups[0].Type)
	require.Len(t, added.TaskGroups[0].Tasks, 1)
	assert.Equal(t, []string{AnnotationForcesCreate}, added.TaskGroups[0].Tasks[0].Annotations)

	deleted, err := j.Diff(nil, false)
	require.NoError(t, err)
	assert.Equal(t, DiffTypeDeleted, deleted.Type)
	assert.Equal(t, &FieldDiff{Type: DiffTypeDeleted, Name: "Priority", Old: "50"}, fieldNamed(deleted.Fields, "Priority"))
	assert.Equal(t, DiffTypeDeleted, deleted.TaskGroups[0].Type)
	assert.Equal(t, []string{AnnotationForcesDestroy}, deleted.TaskGroups[0].Tasks[0].Annotations)

	_, err = (*Job)(nil).Diff(nil, false)
	require.Error(t, err)
	other := testJob()
	other.ID = "api"
	_, err = j.Diff(other, false)
	require.ErrorContains(t, err, `different IDs "web" and "api"`)
}

func TestDiff_Edited(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(j *Job)
		check  func(t *testing.T, d *JobDiff)
	}{
		{"priority", func(j *Job) { j.Priority = 60 }, func(t *testing.T, d *JobDiff) {
			assert.Equal(t, []*FieldDiff{{Type: DiffTypeEdited, Name: "Priority", Old: "50", New: "60"}}, d.Fields)
			assert.Empty(t, d.TaskGroups)
		}},
		{"stop", func(j *Job) { j.Stop = true }, func(t *testing.T, d *JobDiff) {
			assert.Equal(t, []*FieldDiff{{Type: DiffTypeEdited, Name: "Stop", Old: "false", New: "true"}}, d.Fields)
		}},
		{"job meta", func(j *Job) { j.Meta["owner"] = "team-b"; j.Meta["cost"] = "1" }, func(t *testing.T, d *JobDiff) {
			assert.Equal(t, []*FieldDiff{
				{Type: DiffTypeAdded, Name: "Meta[cost]", New: "1"},
				{Type: DiffTypeEdited, Name: "Meta[owner]", Old: "team-a", New: "team-b"},
			}, d.Fields)
		}},
		{"datacenters", func(j *Job) { j.Datacenters = []string{"dc1", "dc3"} }, func(t *testing.T, d *JobDiff) {
			require.Len(t, d.Objects, 1)
			assert.Equal(t, &ObjectDiff{Type: DiffTypeEdited, Name: "Datacenters", Fields: []*FieldDiff{
				{Type: DiffTypeDeleted, Name: "Datacenters", Old: "dc2"},
				{Type: DiffTypeAdded, Name: "Datacenters", New: "dc3"},
			}}, d.Objects[0])
		}},
		{"constraint", func(j *Job) { j.Constraints[0].RTarget = "darwin" }, func(t *testing.T, d *JobDiff) {
			cs := objectsNamed(d.Objects, "Constraint")
			require.Len(t, cs, 2)
			assert.Equal(t, DiffTypeDeleted, cs[0].Type)
			assert.Equal(t, DiffTypeAdded, cs[1].Type)
			assert.Equal(t, "darwin", fieldNamed(cs[1].Fields, "RTarget").New)
		}},
		{"task config", func(j *Job) {
			j.TaskGroups[0].Tasks[0].Config["image"] = "nginx:1.28"
			j.TaskGroups[0].Tasks[0].Config["mount"] = []any{map[string]any{"type": "bind", "target": "/srv", "readonly": true}}
		}, func(t *testing.T, d *JobDiff) {
			require.Len(t, d.TaskGroups, 1)
			g := d.TaskGroups[0]
			assert.Equal(t, DiffTypeEdited, g.Type)
			require.Len(t, g.Tasks, 1)
			task := g.Tasks[0]
			assert.Equal(t, DiffTypeEdited, task.Type)
			assert.Equal(t, []string{AnnotationForcesDestructiveUpdate}, task.Annotations)
			require.Len(t, task.Objects, 1)
			assert.Equal(t, &ObjectDiff{Type: DiffTypeEdited, Name: "Config", Fields: []*FieldDiff{
				{Type: DiffTypeEdited, Name: "image", Old: "nginx:1.27", New: "nginx:1.28"},
				{Type: DiffTypeEdited, Name: "mount[0].target", Old: "/data", New: "/srv"},
			}}, task.Objects[0])
		}},
		{"task meta only", func(j *Job) { j.TaskGroups[0].Tasks[0].Meta["tier"] = "back" }, func(t *testing.T, d *JobDiff) {
			task := d.TaskGroups[0].Tasks[0]
			assert.Equal(t, []string{AnnotationForcesInplaceUpdate}, task.Annotations)
			assert.Equal(t, []*FieldDiff{{Type: DiffTypeEdited, Name: "Meta[tier]", Old: "front", New: "back"}}, task.Fields)
		}},
		{"env", func(j *Job) { j.TaskGroups[0].Tasks[0].Env["DEBUG"] = "1" }, func(t *testing.T, d *JobDiff) {
			task := d.TaskGroups[0].Tasks[0]
			assert.Equal(t, []string{AnnotationForcesDestructiveUpdate}, task.Annotations)
			assert.Equal(t, []*FieldDiff{{Type: DiffTypeAdded, Name: "Env[DEBUG]", New: "1"}}, task.Fields)
		}},
		{"group update block", func(j *Job) { j.TaskGroups[0].Update.MinHealthyTime = 30 * time.Second }, func(t *testing.T, d *JobDiff) {
			g := d.TaskGroups[0]
			assert.Empty(t, g.Tasks)
			assert.Equal(t, []*ObjectDiff{{Type: DiffTypeEdited, Name: "Update", Fields: []*FieldDiff{
				{Type: DiffTypeEdited, Name: "MinHealthyTime", Old: "10s", New: "30s"},
			}}}, g.Objects)
		}},
		{"network change makes edited tasks destructive", func(j *Job) {
			j.TaskGroups[0].Networks[0].ReservedPorts[0].Value = 9001
			j.TaskGroups[0].Tasks[0].Meta["tier"] = "back"
		}, func(t *testing.T, d *JobDiff) {
			g := d.TaskGroups[0]
			nets := objectsNamed(g.Objects, "Network")
			require.Len(t, nets, 1)
			ports := objectsNamed(nets[0].Objects, "Static Port")
			require.Len(t, ports, 1)
			assert.Equal(t, &FieldDiff{Type: DiffTypeEdited, Name: "Value", Old: "9000", New: "9001"}, ports[0].Fields[0])
			assert.Equal(t, []string{AnnotationForcesDestructiveUpdate}, g.Tasks[0].Annotations)
		}},
		{"check edited", func(j *Job) { j.TaskGroups[0].Services[0].Checks[0].Path = "/ready" }, func(t *testing.T, d *JobDiff) {
			svc := objectsNamed(d.TaskGroups[0].Objects, "Service")
			require.Len(t, svc, 1)
			assert.Equal(t, []*ObjectDiff{{Type: DiffTypeEdited, Name: "Check", Fields: []*FieldDiff{
				{Type: DiffTypeEdited, Name: "Path", Old: "/health", New: "/ready"},
			}}}, svc[0].Objects)
		}},
		{"task added", func(j *Job) {
			extra := testJob().TaskGroups[0].Tasks[0]
			extra.Name = "sidecar"
			j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, extra)
		}, func(t *testing.T, d *JobDiff) {
			require.Len(t, d.TaskGroups[0].Tasks, 1)
			assert.Equal(t, "sidecar", d.TaskGroups[0].Tasks[0].Name)
			assert.Equal(t, DiffTypeAdded, d.TaskGroups[0].Tasks[0].Type)
			assert.Equal(t, []string{AnnotationForcesCreate}, d.TaskGroups[0].Tasks[0].Annotations)
		}},
		{"group added", func(j *Job) {
			g := testJob().TaskGroups[0]
			g.Name = "api"
			j.TaskGroups = append(j.TaskGroups, g)
		}, func(t *testing.T, d *JobDiff) {
			require.Len(t, d.TaskGroups, 1)
			assert.Equal(t, "api", d.TaskGroups[0].Name)
			assert.Equal(t, DiffTypeAdded, d.TaskGroups[0].Type)
		}},
		{"shutdown delay removed", func(j *Job) { j.TaskGroups[0].ShutdownDelay = nil }, func(t *testing.T, d *JobDiff) {
			assert.Equal(t, []*FieldDiff{{Type: DiffTypeDeleted, Name: "ShutdownDelay", Old: "5s"}}, d.TaskGroups[0].Fields)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := testJob()
			updated := roundTrip(t, testJob())
			tc.mutate(updated)
			d, err := old.Diff(updated, false)
			require.NoError(t, err)
			assert.Equal(t, DiffTypeEdited, d.Type)
			tc.check(t, d)
		})
	}
}

func TestDiff_Unchanged(t *testing.T) {
	old := testJob()
	same := roundTrip(t, testJob())
	same.Version, same.Status, same.JobModifyIndex = 9, JobStatusDead, 99

	d, err := old.Diff(same, false)
	require.NoError(t, err)
	assert.Equal(t, &JobDiff{Type: DiffTypeNone, ID: "web"}, d)

	ctx, err := old.Diff(same, true)
	require.NoError(t, err)
	assert.Equal(t, DiffTypeNone, ctx.Type)
	assert.Equal(t, &FieldDiff{Type: DiffTypeNone, Name: "Priority", Old: "50", New: "50"}, fieldNamed(ctx.Fields, "Priority"))
	require.Len(t, ctx.TaskGroups, 1)
	assert.Equal(t, DiffTypeNone, ctx.TaskGroups[0].Type)
	require.Len(t, ctx.TaskGroups[0].Tasks, 1)
	assert.Equal(t, DiffTypeNone, ctx.TaskGroups[0].Tasks[0].Type)
	assert.Empty(t, ctx.TaskGroups[0].Tasks[0].Annotations)
	assert.NotEmpty(t, objectsNamed(ctx.TaskGroups[0].Tasks[0].Objects, "Config"))
}

func TestDiff_ContextualKeepsUnchangedSiblings(t *testing.T) {
	old := testJob()
	updated := testJob()
	updated.Priority = 70
	d, err := old.Diff(updated, true)
	require.NoError(t, err)
	assert.Equal(t, DiffTypeEdited, fieldNamed(d.Fields, "Priority").Type)
	assert.Equal(t, DiffTypeNone, fieldNamed(d.Fields, "Name").Type)
}

func TestTaskGroupUpdateType(t *testing.T) {
	tg := func(j *Job) *TaskGroup { return j.TaskGroups[0] }
	task := func(j *Job) *Task { return j.TaskGroups[0].Tasks[0] }
	cases := []struct {
		name   string
		mutate func(j *Job)
		want   string
	}{
		{"identical", func(j *Job) {}, UpdateTypeNone},
		{"count only", func(j *Job) { tg(j).Count = 0 }, UpdateTypeNone},
		{"task order", func(j *Job) {
			extra := testJob().TaskGroups[0].Tasks[0]
			extra.Name = "a"
			tg(j).Tasks = append([]*Task{extra}, tg(j).Tasks...)
		}, UpdateTypeDestructive}, // a task was added

		{"group meta", func(j *Job) { tg(j).Meta = map[string]string{"a": "b"} }, UpdateTypeInPlace},
		{"task meta", func(j *Job) { task(j).Meta["tier"] = "x" }, UpdateTypeInPlace},
		{"group services", func(j *Job) { tg(j).Services[0].Tags = []string{"c"} }, UpdateTypeInPlace},
		{"task services", func(j *Job) { task(j).Services = []*Service{{Name: "s"}} }, UpdateTypeInPlace},
		{"restart policy", func(j *Job) { tg(j).RestartPolicy.Attempts = 5 }, UpdateTypeInPlace},
		{"update block", func(j *Job) { tg(j).Update.Canary = 50 }, UpdateTypeInPlace},
		{"group constraints", func(j *Job) { tg(j).Constraints = []*Constraint{{LTarget: "a", Operand: "=", RTarget: "b"}} }, UpdateTypeInPlace},
		{"task constraints", func(j *Job) { task(j).Constraints = []*Constraint{{LTarget: "a", Operand: "=", RTarget: "b"}} }, UpdateTypeInPlace},
		{"affinities", func(j *Job) { tg(j).Affinities = []*Affinity{{LTarget: "a", Operand: "=", RTarget: "b", Weight: 10}} }, UpdateTypeInPlace},
		{"spreads", func(j *Job) { tg(j).Spreads = []*Spread{{Attribute: "${node.datacenter}"}} }, UpdateTypeInPlace},
		{"kill timeout", func(j *Job) { task(j).KillTimeout = time.Minute }, UpdateTypeInPlace},
		{"log config", func(j *Job) { task(j).LogConfig.MaxFiles = 3 }, UpdateTypeInPlace},
		{"task shutdown delay", func(j *Job) { task(j).ShutdownDelay = time.Second }, UpdateTypeInPlace},
		{"group shutdown delay", func(j *Job) { tg(j).ShutdownDelay = nil }, UpdateTypeInPlace},
		{"disconnect block", func(j *Job) {
			d := time.Minute
			tg(j).Disconnect = &DisconnectStrategy{LostAfter: &d}
		}, UpdateTypeInPlace},
		{"max_run_duration (the client applies it to the running allocation)", func(j *Job) { d := time.Hour; tg(j).MaxRunDuration = &d }, UpdateTypeInPlace},

		{"group networks", func(j *Job) { tg(j).Networks[0].DynamicPorts[0].To = 9090 }, UpdateTypeDestructive},
		{"ephemeral disk", func(j *Job) { tg(j).EphemeralDisk.SizeMB = 500 }, UpdateTypeDestructive},
		{"templates (rendered before the start)", func(j *Job) {
			task(j).Templates = []*Template{{EmbeddedTmpl: "x", DestPath: "local/x", ChangeMode: "noop"}}
		}, UpdateTypeDestructive},
		{"task added", func(j *Job) {
			extra := testJob().TaskGroups[0].Tasks[0]
			extra.Name = "sidecar"
			tg(j).Tasks = append(tg(j).Tasks, extra)
		}, UpdateTypeDestructive},
		{"task removed", func(j *Job) {
			extra := testJob().TaskGroups[0].Tasks[0]
			extra.Name = "sidecar"
			tg(j).Tasks = []*Task{extra}
		}, UpdateTypeDestructive},
		{"driver", func(j *Job) { task(j).Driver = "raw_exec" }, UpdateTypeDestructive},
		{"user", func(j *Job) { task(j).User = "nobody" }, UpdateTypeDestructive},
		{"config", func(j *Job) { task(j).Config["image"] = "nginx:1.28" }, UpdateTypeDestructive},
		{"env", func(j *Job) { task(j).Env["A"] = "1" }, UpdateTypeDestructive},
		{"resources", func(j *Job) { task(j).Resources.MemoryMB = 256 }, UpdateTypeDestructive},
		{"kill signal", func(j *Job) { task(j).KillSignal = "SIGINT" }, UpdateTypeDestructive},
		{"lifecycle", func(j *Job) { task(j).Lifecycle = &TaskLifecycle{Hook: "prestart"} }, UpdateTypeDestructive},
		{"leader", func(j *Job) { task(j).Leader = true }, UpdateTypeDestructive},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := testJob().TaskGroups[0]
			updated := roundTrip(t, testJob())
			tc.mutate(updated)
			assert.Equal(t, tc.want, old.UpdateType(updated.TaskGroups[0]))
		})
	}

	t.Run("reordered tasks", func(t *testing.T) {
		a := testJob().TaskGroups[0]
		second := testJob().TaskGroups[0].Tasks[0]
		second.Name = "b"
		a.Tasks = append(a.Tasks, second)
		b := *a
		b.Tasks = []*Task{a.Tasks[1], a.Tasks[0]}
		assert.Equal(t, UpdateTypeNone, a.UpdateType(&b))
	})
	t.Run("nil groups", func(t *testing.T) {
		var n *TaskGroup
		assert.Equal(t, UpdateTypeNone, n.UpdateType(nil))
		assert.Equal(t, UpdateTypeDestructive, n.UpdateType(testJob().TaskGroups[0]))
		assert.Equal(t, UpdateTypeDestructive, testJob().TaskGroups[0].UpdateType(nil))
	})
}

// genJob draws a small random job: enough variety in every kind of field
// (scalars, maps, string lists, nested blocks, lists of blocks, driver
// config) to exercise the diff and equality code.
func genJob(t *rapid.T) *Job {
	j := &Job{
		ID:          "job",
		Name:        rapid.SampledFrom([]string{"job", "other"}).Draw(t, "name"),
		Namespace:   DefaultNamespace,
		Type:        rapid.SampledFrom([]string{JobTypeSystem, JobTypeSysBatch}).Draw(t, "type"),
		Priority:    rapid.IntRange(1, 100).Draw(t, "priority"),
		Datacenters: rapid.SliceOfDistinct(rapid.SampledFrom([]string{"dc1", "dc2", "dc3"}), rapid.ID[string]).Draw(t, "dcs"),
		Meta:        genStringMap(t, "meta"),
		Stop:        rapid.Bool().Draw(t, "stop"),
	}
	if rapid.Bool().Draw(t, "constraint") {
		j.Constraints = []*Constraint{genConstraint(t)}
	}
	for i := range rapid.IntRange(1, 3).Draw(t, "groups") {
		j.TaskGroups = append(j.TaskGroups, genGroup(t, fmt.Sprintf("g%d", i)))
	}
	return j
}

func genGroup(t *rapid.T, name string) *TaskGroup {
	tg := &TaskGroup{
		Name:  name,
		Count: rapid.IntRange(0, 1).Draw(t, "count"),
		Meta:  genStringMap(t, "gmeta"),
	}
	if rapid.Bool().Draw(t, "update") {
		tg.Update = &UpdateStrategy{
			MaxParallel:     rapid.IntRange(0, 3).Draw(t, "max_parallel"),
			Canary:          rapid.IntRange(0, 100).Draw(t, "canary"),
			HealthCheck:     rapid.SampledFrom([]string{"checks", "task_states", "manual"}).Draw(t, "hc"),
			HealthyDeadline: time.Duration(rapid.IntRange(1, 600).Draw(t, "hd")) * time.Second,
		}
	}
	if rapid.Bool().Draw(t, "network") {
		tg.Networks = []*NetworkResource{{
			DynamicPorts:  []Port{{Label: "http", To: rapid.IntRange(-1, 9000).Draw(t, "to")}},
			ReservedPorts: []Port{{Label: "admin", Value: rapid.IntRange(1, 65535).Draw(t, "static")}},
		}}
	}
	if rapid.Bool().Draw(t, "service") {
		tg.Services = []*Service{{Name: "svc", PortLabel: "http", Tags: []string{"a"},
			Checks: []ServiceCheck{{Name: "c", Type: "tcp", Interval: time.Second, Timeout: time.Second}}}}
	}
	if rapid.Bool().Draw(t, "shutdown_delay") {
		d := time.Duration(rapid.IntRange(0, 10).Draw(t, "delay")) * time.Second
		tg.ShutdownDelay = &d
	}
	for i := range rapid.IntRange(1, 2).Draw(t, "tasks") {
		tg.Tasks = append(tg.Tasks, genTask(t, fmt.Sprintf("t%d", i)))
	}
	return tg
}

func genTask(t *rapid.T, name string) *Task {
	task := &Task{
		Name:        name,
		Driver:      rapid.SampledFrom([]string{"docker", "raw_exec", "mock"}).Draw(t, "driver"),
		Env:         genStringMap(t, "env"),
		Meta:        genStringMap(t, "tmeta"),
		KillTimeout: time.Duration(rapid.IntRange(0, 30).Draw(t, "kill")) * time.Second,
		Resources:   &Resources{CPU: rapid.IntRange(1, 500).Draw(t, "cpu"), MemoryMB: rapid.IntRange(10, 512).Draw(t, "mem")},
		Config: map[string]any{
			"image": rapid.SampledFrom([]string{"a:1", "a:2"}).Draw(t, "image"),
			"port":  rapid.IntRange(1, 9).Draw(t, "port"),
			"mount": []any{map[string]any{"target": rapid.SampledFrom([]string{"/a", "/b"}).Draw(t, "target")}},
		},
	}
	if rapid.Bool().Draw(t, "lifecycle") {
		task.Lifecycle = &TaskLifecycle{Hook: "prestart", Sidecar: rapid.Bool().Draw(t, "sidecar")}
	}
	return task
}

func genConstraint(t *rapid.T) *Constraint {
	return &Constraint{
		LTarget: "${attr.kernel.name}",
		Operand: rapid.SampledFrom([]string{"=", "!=", "regexp"}).Draw(t, "operand"),
		RTarget: rapid.SampledFrom([]string{"linux", "darwin"}).Draw(t, "rtarget"),
	}
}

func genStringMap(t *rapid.T, label string) map[string]string {
	return rapid.MapOfN(rapid.SampledFrom([]string{"a", "b", "c"}), rapid.SampledFrom([]string{"x", "y"}), 0, 3).Draw(t, label)
}

// mutations each change a job's specification in one place.
var mutations = []func(j *Job){
	func(j *Job) { j.Priority = j.Priority%100 + 1 },
	func(j *Job) { j.Stop = !j.Stop },
	func(j *Job) { j.Datacenters = append(j.Datacenters, "dc-new") },
	func(j *Job) { j.Meta = map[string]string{"new": "1"} },
	func(j *Job) {
		j.Constraints = append(j.Constraints, &Constraint{LTarget: "x", Operand: "=", RTarget: "y"})
	},
	func(j *Job) { j.TaskGroups[0].Count = 1 - j.TaskGroups[0].Count },
	func(j *Job) { j.TaskGroups = append(j.TaskGroups, &TaskGroup{Name: "zz"}) },
	func(j *Job) { j.TaskGroups[0].Update = &UpdateStrategy{MaxParallel: 99} },
	func(j *Job) { j.TaskGroups[0].Tasks[0].Driver += "-x" },
	func(j *Job) { j.TaskGroups[0].Tasks[0].Env = map[string]string{"NEW": "1"} },
	func(j *Job) { j.TaskGroups[0].Tasks[0].Config["image"] = "b:3" },
	func(j *Job) { j.TaskGroups[0].Tasks[0].Config["port"] = 10 },
	func(j *Job) {
		j.TaskGroups[0].Tasks[0].Config["mount"] = []any{map[string]any{"target": "/c"}}
	},
	func(j *Job) { j.TaskGroups[0].Tasks[0].Resources.CPU += 1000 },
	func(j *Job) { j.TaskGroups[0].Tasks[0].KillTimeout += time.Hour },
	func(j *Job) { j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, &Task{Name: "extra"}) },
}

func TestDiff_Properties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		j := genJob(rt)
		same := roundTrip(t, j)

		for _, contextual := range []bool{false, true} {
			d, err := j.Diff(same, contextual)
			require.NoError(rt, err)
			if d.Type != DiffTypeNone {
				rt.Fatalf("diff of a job with itself (contextual=%v) is %s: %+v", contextual, d.Type, d)
			}
		}
		if j.SpecChanged(same) || same.SpecChanged(j) {
			rt.Fatalf("SpecChanged of a job with itself")
		}
		for _, tg := range j.TaskGroups {
			if ut := tg.UpdateType(same.LookupTaskGroup(tg.Name)); ut != UpdateTypeNone {
				rt.Fatalf("UpdateType of group %q with itself is %s", tg.Name, ut)
			}
		}

		changed := roundTrip(t, j)
		mutations[rapid.IntRange(0, len(mutations)-1).Draw(rt, "mutation")](changed)
		d, err := j.Diff(changed, false)
		require.NoError(rt, err)
		if d.Type != DiffTypeEdited {
			rt.Fatalf("diff after a mutation is %s", d.Type)
		}
		if !j.SpecChanged(changed) {
			rt.Fatalf("SpecChanged missed a mutation")
		}
	})
}
