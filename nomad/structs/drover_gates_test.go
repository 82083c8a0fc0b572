package structs

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseAnalysisCondition(t *testing.T) {
	for in, want := range map[string]AnalysisCondition{
		"< 0.01": {"<", 0.01}, "<=1": {"<=", 1}, " > -2 ": {">", -2}, ">= 1e3": {">=", 1000}, "== 0": {"==", 0}, "!= 5": {"!=", 5},
	} {
		got, err := ParseAnalysisCondition(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "0.01", "=< 1", "< x", "< NaN", "< Inf", "~ 1"} {
		_, err := ParseAnalysisCondition(in)
		require.Error(t, err, in)
	}
	c := AnalysisCondition{"<", 0.01}
	require.True(t, c.Holds(0.001))
	require.False(t, c.Holds(0.01))
	require.False(t, c.Holds(math.NaN()), "NaN meets nothing")
	require.False(t, AnalysisCondition{"!=", 1}.Holds(math.NaN()))
	require.Equal(t, "<= 0.5", AnalysisCondition{"<=", 0.5}.String())
}

func TestGateMetaValidation(t *testing.T) {
	metric := map[string]string{DroverMetaAnalysisQuery: "max(errors)", DroverMetaAnalysisCondition: "< 0.01"}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	for _, c := range []struct {
		name    string
		meta    map[string]string
		typ     string
		wantErr string
	}{
		{name: "metric gate", meta: with(metric, DroverMetaAnalysisInterval, "15s", DroverMetaAnalysisFailureLimit, "2")},
		{name: "webhook gate", meta: map[string]string{DroverMetaGateWebhook: "https://gate.example/hook"}},
		{name: "query without condition", meta: map[string]string{DroverMetaAnalysisQuery: "up"},
			wantErr: `meta "drover.analysis_query": needs drover.analysis_condition`},
		{name: "bad condition", meta: with(metric, DroverMetaAnalysisCondition, "below 1"),
			wantErr: `meta "drover.analysis_condition": "below 1": want <op> <number>`},
		{name: "condition without query", meta: map[string]string{DroverMetaAnalysisCondition: "< 1"},
			wantErr: `meta "drover.analysis_condition": has no effect without drover.analysis_query`},
		{name: "bad interval", meta: with(metric, DroverMetaAnalysisInterval, "often"),
			wantErr: `meta "drover.analysis_interval": "often" is not a duration`},
		{name: "interval too short", meta: with(metric, DroverMetaAnalysisInterval, "100ms"),
			wantErr: `meta "drover.analysis_interval": 100ms is below the minimum of 1s`},
		{name: "bad failure limit", meta: with(metric, DroverMetaAnalysisFailureLimit, "-1"),
			wantErr: `meta "drover.analysis_failure_limit": "-1" is not a whole number >= 0`},
		{name: "bad webhook", meta: map[string]string{DroverMetaGateWebhook: "gate.example/hook"},
			wantErr: `meta "drover.gate_webhook": "gate.example/hook" is not an http:// or https:// URL`},
		{name: "batch job", typ: JobTypeBatch, meta: map[string]string{DroverMetaGateWebhook: "http://gate.example/"},
			wantErr: `meta "drover.gate_webhook": gates apply to deployments, which batch jobs do not have`},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := testJob()
			if c.typ != "" {
				j.Type = c.typ
			}
			j.TaskGroups[0].Meta = c.meta
			err := j.Validate()
			if c.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), c.wantErr)
		})
	}
}

func TestDroverGatesAndHold(t *testing.T) {
	tg := &TaskGroup{Meta: map[string]string{DroverMetaAnalysisQuery: "up", DroverMetaAnalysisCondition: "== 1", DroverMetaAnalysisInterval: "5s"}}
	g := tg.DroverGates()
	require.Equal(t, GroupGates{Query: "up", Condition: AnalysisCondition{"==", 1}, Interval: 5 * time.Second}, g)
	require.Equal(t, DefaultAnalysisInterval, (&TaskGroup{}).DroverGates().Interval)
	require.False(t, (&TaskGroup{}).DroverGates().Any())

	st := &DeploymentState{HealthyAllocs: 0}
	require.False(t, GateHoldsWave(tg, st), "the first wave")
	st.HealthyAllocs = 2
	require.True(t, GateHoldsWave(tg, st))
	st.Gate = &DeploymentGate{PassedAt: 2}
	require.False(t, GateHoldsWave(tg, st))
	require.False(t, GateHoldsWave(&TaskGroup{}, &DeploymentState{HealthyAllocs: 5}), "no gate, no hold")
}
