package structs

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseCanarySelector(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    *Constraint
		problem string
	}{
		{in: "${node.datacenter} = dc1", want: &Constraint{LTarget: "${node.datacenter}", Operand: "=", RTarget: "dc1"}},
		{in: "  ${meta.zone}   regexp   ^eu- ", want: &Constraint{LTarget: "${meta.zone}", Operand: "regexp", RTarget: "^eu-"}},
		{in: "${meta.rack} = rack a", want: &Constraint{LTarget: "${meta.rack}", Operand: "=", RTarget: "rack a"}},
		{in: "${attr.kernel.name} is_set", want: &Constraint{LTarget: "${attr.kernel.name}", Operand: "is_set"}},
		{in: "${attr.cpu.numcores} >= 4", want: &Constraint{LTarget: "${attr.cpu.numcores}", Operand: ">=", RTarget: "4"}},
		{in: "${node.class} != ${meta.avoid}", want: &Constraint{LTarget: "${node.class}", Operand: "!=", RTarget: "${meta.avoid}"}},
		{in: "", problem: "the attribute must be a node attribute reference"},
		{in: "dc1", problem: "the attribute must be a node attribute reference"},
		{in: "${node.datacenter}", problem: "the operator is missing"},
		{in: "${node.datacenter} ~ dc1", problem: `unknown operator "~"`},
		{in: "${node.datacenter} distinct_hosts", problem: `unknown operator "distinct_hosts"`},
		{in: "${node.datacenter} =", problem: `operator "=" needs a value`},
		{in: "${meta.zone} is_set x", problem: `operator "is_set" takes no value`},
		{in: "${meta.zone} regexp ([a-z", problem: "does not compile"},
		{in: "${node.nope} = x", problem: "must be a node attribute reference"},
		{in: "${meta.} = x", problem: "must be a node attribute reference"},
	} {
		got, err := ParseCanarySelector(c.in)
		if c.problem != "" {
			require.ErrorContains(t, err, c.problem, "%q", c.in)
			continue
		}
		require.NoError(t, err, "%q", c.in)
		require.Equal(t, c.want, got, "%q", c.in)
	}
}

func TestParseCanaryCountAndSpread(t *testing.T) {
	for in, want := range map[string]int{"1": 1, "12": 12} {
		n, err := ParseCanaryCount(in)
		require.NoError(t, err)
		require.Equal(t, want, n)
	}
	for _, in := range []string{"", "0", "-1", "+2", " 2", "2.5", "two", "1e3"} {
		_, err := ParseCanaryCount(in)
		require.ErrorContains(t, err, "must be a positive integer", "%q", in)
	}
	for _, in := range []string{"${node.datacenter}", "${node.class}", "${node.pool}", "${node.unique.name}",
		"${node.unique.id}", "${attr.platform.aws.placement.availability-zone}", "${meta.zone}"} {
		got, err := ParseCanarySpread(in)
		require.NoError(t, err, in)
		require.Equal(t, in, got)
	}
	for _, in := range []string{"", "node.datacenter", "${node.datacenter", "${}", "${attr.}", "${node.name}",
		"${meta.a}${meta.b}", "${meta.a b}", "dc1"} {
		_, err := ParseCanarySpread(in)
		require.ErrorContains(t, err, "must be a node attribute reference", "%q", in)
	}
}

// TestValidate_CanaryTargeting: the keys are checked when the job is
// registered, each problem naming its key.
func TestValidate_CanaryTargeting(t *testing.T) {
	for _, c := range []struct {
		name    string
		mutate  func(j *Job)
		meta    map[string]string
		problem string // "" for valid
	}{
		{name: "count alone", meta: map[string]string{MetaCanaryCount: "2"},
			mutate: func(j *Job) { j.TaskGroups[0].Update.Canary = 0 }},
		{name: "all three", meta: map[string]string{MetaCanaryCount: "2", MetaCanarySelector: "${meta.zone} regexp ^eu-",
			MetaCanarySpread: "${node.datacenter}"}},
		{name: "selector with the percentage", meta: map[string]string{MetaCanarySelector: "${node.datacenter} = dc1"}},
		{name: "bad count", meta: map[string]string{MetaCanaryCount: "0"}, problem: `meta "drover.canary_count": must be a positive integer, got "0"`},
		{name: "bad selector", meta: map[string]string{MetaCanarySelector: "dc1"}, problem: `meta "drover.canary_selector": must be "<attribute> <operator> <value>"`},
		{name: "bad spread", meta: map[string]string{MetaCanarySpread: "datacenter"}, problem: `meta "drover.canary_spread": must be a node attribute reference`},
		{name: "service job", meta: map[string]string{MetaCanaryCount: "1"},
			mutate:  func(j *Job) { j.Type = JobTypeService; j.TaskGroups[0].Update.Canary = 0 },
			problem: `meta "drover.canary_count": only system jobs support canary targeting (this is a service job`},
		{name: "sysbatch job", meta: map[string]string{MetaCanarySpread: "${node.datacenter}"},
			mutate: func(j *Job) {
				j.Type = JobTypeSysBatch
				j.Update.MaxParallel = 0
				j.TaskGroups[0].Update = nil
			},
			problem: `meta "drover.canary_spread": only system jobs support canary targeting (this is a sysbatch job`},
		{name: "no deployment", meta: map[string]string{MetaCanaryCount: "1"},
			mutate:  func(j *Job) { j.TaskGroups[0].Update.MaxParallel = 0 },
			problem: `meta "drover.canary_count": canaries need a deployment`},
		{name: "spread without canaries", meta: map[string]string{MetaCanarySpread: "${node.datacenter}"},
			mutate:  func(j *Job) { j.TaskGroups[0].Update.Canary = 0 },
			problem: `meta "drover.canary_spread": has no effect without canaries`},
		{name: "selector without canaries", meta: map[string]string{MetaCanarySelector: "${node.datacenter} = dc1"},
			mutate:  func(j *Job) { j.TaskGroups[0].Update.Canary = 0 },
			problem: `meta "drover.canary_selector": has no effect without canaries`},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := testJob()
			if c.mutate != nil {
				c.mutate(j)
			}
			j.TaskGroups[0].Meta = c.meta
			err := j.Validate()
			if c.problem == "" {
				require.NoError(t, err)
				return
			}
			var verr *ValidationError
			require.True(t, errors.As(err, &verr), "%v", err)
			found := false
			for _, p := range verr.Problems {
				found = found || strings.Contains(p, c.problem)
			}
			require.True(t, found, "want %q in:\n%s", c.problem, strings.Join(verr.Problems, "\n"))
		})
	}
}
