package structs

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseWaveSize: "P%" with P in 1..100 or a whole number ≥ 1, digits
// only; everything else is refused.
func TestParseWaveSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want WaveSize
		err  string
	}{
		{in: "10%", want: WaveSize{Percent: 10}},
		{in: "100%", want: WaveSize{Percent: 100}},
		{in: "1%", want: WaveSize{Percent: 1}},
		{in: "3", want: WaveSize{N: 3}},
		{in: "0%", err: "between 1% and 100%"},
		{in: "101%", err: "between 1% and 100%"},
		{in: "0", err: "at least 1"},
		{in: "12.5%", err: "whole percentage"},
		{in: "-1", err: "whole number of nodes"},
		{in: "+3", err: "whole number of nodes"},
		{in: " 10%", err: "whole percentage"},
		{in: "%", err: "whole percentage"},
		{in: "", err: "whole number of nodes"},
		{in: "ten", err: "whole number of nodes"},
		{in: "99999999999", err: "whole number of nodes"},
	} {
		got, err := ParseWaveSize(c.in)
		if c.err != "" {
			require.Error(t, err, c.in)
			assert.Contains(t, err.Error(), c.err, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
}

// TestWaveSizeOf: a percentage of the feasible nodes rounded up, at least
// 1; a whole number whatever the nodes.
func TestWaveSizeOf(t *testing.T) {
	for _, c := range []struct {
		w        WaveSize
		feasible int
		want     int
	}{
		{WaveSize{Percent: 10}, 20, 2},
		{WaveSize{Percent: 10}, 21, 3},
		{WaveSize{Percent: 10}, 19, 2},
		{WaveSize{Percent: 10}, 1, 1},
		{WaveSize{Percent: 10}, 0, 1},
		{WaveSize{Percent: 100}, 7, 7},
		{WaveSize{Percent: 33}, 10000, 3300},
		{WaveSize{N: 4}, 1, 4},
	} {
		assert.Equal(t, c.want, c.w.Of(c.feasible), "%+v of %d", c.w, c.feasible)
	}
}

func TestParsePartition(t *testing.T) {
	for in, want := range map[string]int{"0": 0, "5": 5, "120": 120} {
		got, err := ParsePartition(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got)
	}
	for _, in := range []string{"", "-1", "5%", "1.5", "five", " 5"} {
		_, err := ParsePartition(in)
		assert.Error(t, err, in)
	}
}

// TestTaskGroupDroverWaveSizeAndPartition: the meta key overrides the
// update block; unset (or, for a job stored without validation, invalid)
// falls back to it.
func TestTaskGroupDroverWaveSizeAndPartition(t *testing.T) {
	tg := &TaskGroup{Update: &UpdateStrategy{MaxParallel: 3}}
	assert.Equal(t, 3, tg.DroverWaveSize(20))
	assert.Equal(t, 0, tg.DroverPartition())
	tg.Meta = map[string]string{DroverMetaMaxParallel: "10%", DroverMetaPartition: "5"}
	assert.Equal(t, 2, tg.DroverWaveSize(20))
	assert.Equal(t, 1, tg.DroverWaveSize(3))
	assert.Equal(t, 5, tg.DroverPartition())
	tg.Meta = map[string]string{DroverMetaMaxParallel: "7"}
	assert.Equal(t, 7, tg.DroverWaveSize(20))
	tg.Meta = map[string]string{DroverMetaMaxParallel: "bad", DroverMetaPartition: "bad"}
	assert.Equal(t, 3, tg.DroverWaveSize(20))
	assert.Equal(t, 0, tg.DroverPartition())
	assert.Equal(t, 0, (&TaskGroup{}).DroverWaveSize(20))
}

// TestSameApartFromDroverMeta: only drover.* keys are set aside.
func TestSameApartFromDroverMeta(t *testing.T) {
	a := testJob().TaskGroups[0]
	b := testJob().TaskGroups[0]
	a.Meta = map[string]string{"team": "x", DroverMetaPartition: "5"}
	b.Meta = map[string]string{"team": "x", DroverMetaPartition: "0", DroverMetaMaxParallel: "10%"}
	assert.True(t, a.SameApartFromDroverMeta(b))
	b.Meta = map[string]string{"team": "x"}
	assert.True(t, a.SameApartFromDroverMeta(b))
	b.Meta = map[string]string{"team": "y"}
	assert.False(t, a.SameApartFromDroverMeta(b))
	b.Meta = nil
	assert.False(t, a.SameApartFromDroverMeta(b))
	c := testJob().TaskGroups[0]
	c.Tasks[0].Config["image"] = "nginx:1.28"
	c.Meta = a.Meta
	assert.False(t, a.SameApartFromDroverMeta(c))
	assert.Equal(t, "5", a.Meta[DroverMetaPartition], "the groups are not modified")
	assert.True(t, (*TaskGroup)(nil).SameApartFromDroverMeta(nil))
	assert.False(t, a.SameApartFromDroverMeta(nil))
}

// TestValidateDroverWaveKeys: registration refuses a bad value, a
// non-system job and a wave size without a deployment, naming the key.
func TestValidateDroverWaveKeys(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(j *Job)
		want   string // "" valid
	}{
		{"percent", func(j *Job) { j.TaskGroups[0].Meta = map[string]string{DroverMetaMaxParallel: "10%"} }, ""},
		{"whole number", func(j *Job) { j.TaskGroups[0].Meta = map[string]string{DroverMetaMaxParallel: "4"} }, ""},
		{"partition", func(j *Job) { j.TaskGroups[0].Meta = map[string]string{DroverMetaPartition: "5"} }, ""},
		{"partition 0", func(j *Job) { j.TaskGroups[0].Meta = map[string]string{DroverMetaPartition: "0"} }, ""},
		{"partition without deployment", func(j *Job) {
			j.TaskGroups[0].Update.MaxParallel = 0
			j.TaskGroups[0].Update.Canary = 0
			j.TaskGroups[0].Meta = map[string]string{DroverMetaPartition: "2"}
		}, ""},
		{"bad percent", func(j *Job) { j.TaskGroups[0].Meta = map[string]string{DroverMetaMaxParallel: "150%"} },
			`meta "drover.max_parallel": percentage must be between 1% and 100%, got "150%"`},
		{"bad value", func(j *Job) { j.TaskGroups[0].Meta = map[string]string{DroverMetaMaxParallel: "lots"} },
			`meta "drover.max_parallel": must be a whole number of nodes or a percentage`},
		{"no deployment", func(j *Job) {
			j.TaskGroups[0].Update.MaxParallel = 0
			j.TaskGroups[0].Update.Canary = 0
			j.TaskGroups[0].Meta = map[string]string{DroverMetaMaxParallel: "10%"}
		}, `meta "drover.max_parallel": needs a deployment, but update { max_parallel } is 0`},
		{"service job", func(j *Job) {
			j.Type = JobTypeService
			j.TaskGroups[0].Update.Canary = 0
			j.TaskGroups[0].Meta = map[string]string{DroverMetaMaxParallel: "10%"}
		}, `meta "drover.max_parallel": only system jobs roll out in waves of nodes, not service jobs`},
		{"bad partition", func(j *Job) { j.TaskGroups[0].Meta = map[string]string{DroverMetaPartition: "25%"} },
			`meta "drover.partition": must be a whole number of nodes (0 or more), got "25%"`},
		{"sysbatch partition", func(j *Job) {
			j.Type = JobTypeSysBatch
			j.TaskGroups[0].Update = nil
			j.TaskGroups[0].Meta = map[string]string{DroverMetaPartition: "1"}
		}, `meta "drover.partition": only system jobs support a partition of nodes, not sysbatch jobs`},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := testJob()
			c.mutate(j)
			err := j.Validate()
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			var verr *ValidationError
			require.True(t, errors.As(err, &verr), "%v", err)
			assert.True(t, containsProblem(verr.Problems, c.want), "want %q in:\n%s", c.want, err)
		})
	}
}
