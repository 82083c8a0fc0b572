package structs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roundTrip deep-copies j through the raft encoding, as a stored job is read
// back: driver config numbers come back as int64 instead of float64 or int.
func roundTrip(t *testing.T, j *Job) *Job {
	t.Helper()
	data, err := Encode(JobRegisterRequestType, j)
	require.NoError(t, err)
	var out Job
	require.NoError(t, Decode(data[1:], &out))
	return &out
}

func TestCanonicalize_Defaults(t *testing.T) {
	j := &Job{ID: "x"}
	j.Canonicalize()
	assert.Equal(t, DefaultNamespace, j.Namespace)
	assert.Equal(t, DefaultNodePool, j.NodePool)
	assert.Equal(t, []string{"*"}, j.Datacenters)
	assert.Nil(t, j.Meta, "nil maps stay nil")

	// Set values are kept, and a second call changes nothing.
	k := &Job{Namespace: "ops", NodePool: "edge", Datacenters: []string{"b", "a"}}
	k.Canonicalize()
	k.Canonicalize()
	assert.Equal(t, &Job{Namespace: "ops", NodePool: "edge", Datacenters: []string{"b", "a"}}, k, "nothing sorted")

	var nilJob *Job
	assert.NotPanics(t, nilJob.Canonicalize)
}

func TestSpecChanged_IgnoresServerFields(t *testing.T) {
	old := testJob()
	cases := map[string]func(j *Job){
		"Status":            func(j *Job) { j.Status = JobStatusDead },
		"StatusDescription": func(j *Job) { j.StatusDescription = "x" },
		"Stable":            func(j *Job) { j.Stable = true },
		"Version":           func(j *Job) { j.Version = 9 },
		"SubmitTime":        func(j *Job) { j.SubmitTime = 1 },
		"CreateIndex":       func(j *Job) { j.CreateIndex = 7 },
		"ModifyIndex":       func(j *Job) { j.ModifyIndex = 8 },
		"JobModifyIndex":    func(j *Job) { j.JobModifyIndex = 9 },
		"VersionTag":        func(j *Job) { j.VersionTag = &JobVersionTag{Name: "x"} },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			j := testJob()
			mutate(j)
			assert.False(t, old.SpecChanged(j))
			assert.False(t, j.SpecChanged(old))
		})
	}
	assert.Equal(t, JobStatusRunning, old.Status, "SpecChanged must not modify its receiver")
	assert.Equal(t, uint64(3), old.Version)
}

func TestSpecChanged_Detects(t *testing.T) {
	cases := map[string]func(j *Job){
		"Stop":        func(j *Job) { j.Stop = true },
		"Priority":    func(j *Job) { j.Priority = 60 },
		"Meta":        func(j *Job) { j.Meta["owner"] = "team-b" },
		"group count": func(j *Job) { j.TaskGroups[0].Count = 0 },
		"config":      func(j *Job) { j.TaskGroups[0].Tasks[0].Config["image"] = "nginx:1.28" },
		"nested config": func(j *Job) {
			j.TaskGroups[0].Tasks[0].Config["mount"] = []any{map[string]any{"type": "bind", "target": "/other"}}
		},
		"update removed": func(j *Job) { j.TaskGroups[0].Update = nil },
		"shutdown delay": func(j *Job) { d := time.Second; j.TaskGroups[0].ShutdownDelay = &d },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			j := roundTrip(t, testJob())
			mutate(j)
			assert.True(t, testJob().SpecChanged(j))
		})
	}
}

func TestSpecChanged_EquivalentEncodings(t *testing.T) {
	a := testJob()
	a.TaskGroups[0].Tasks[0].Config["port"] = 8080.0 // as decoded from JSON
	a.TaskGroups[0].Tasks[0].Config["labels"] = []map[string]any{{"team": "web"}}
	b := testJob()
	b.TaskGroups[0].Tasks[0].Config["port"] = 8080 // as built by a Go client
	b.TaskGroups[0].Tasks[0].Config["labels"] = []map[string]any{{"team": "web"}}
	b = roundTrip(t, b) // int64, []any of map[string]any
	require.IsType(t, int64(0), b.TaskGroups[0].Tasks[0].Config["port"])
	require.IsType(t, []any{}, b.TaskGroups[0].Tasks[0].Config["labels"])
	assert.False(t, a.SpecChanged(b), "numbers compare by value across Go types")

	c := testJob()
	c.Meta = map[string]string{}
	c.Constraints = []*Constraint{}
	d := testJob()
	d.Meta, d.Constraints = nil, nil
	assert.False(t, c.SpecChanged(d), "nil and empty compare equal")

	e := testJob()
	e.TaskGroups[0].Tasks[0].Config["port"] = 8080.5
	f := testJob()
	f.TaskGroups[0].Tasks[0].Config["port"] = 8080
	assert.True(t, e.SpecChanged(f))
}

func TestSpecChanged_Nil(t *testing.T) {
	var n *Job
	assert.False(t, n.SpecChanged(nil))
	assert.True(t, n.SpecChanged(testJob()))
	assert.True(t, testJob().SpecChanged(nil))
}
