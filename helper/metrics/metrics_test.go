package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func expose(t *testing.T, r *Registry) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, r.WritePrometheus(&b))
	return b.String()
}

func TestWritePrometheus_Golden(t *testing.T) {
	r := NewRegistry()
	reqs := r.Counter("drover_http_requests_total", "HTTP requests served.", "method", "code")
	reqs.WithLabels("GET", "200").Add(3)
	reqs.WithLabels("PUT", "400").Inc()
	reqs.WithLabels("GET", "404").Inc()
	reqs.WithLabels(`we"ird\`, "a\nb").Inc()

	r.Gauge("drover_nodes", "Nodes by status.\nSecond line \\ backslash.", "status").WithLabels("ready").Set(2)
	r.Gauge("drover_leader", "1 when this server is the leader.").Set(1)
	r.GaugeFunc("drover_goroutines", "Goroutines.", func() float64 { return 42 })
	r.Gauge("drover_unused", "A labelled gauge without series is left out.", "x")

	h := r.HistogramBuckets("drover_plan_apply_seconds", "Plan apply time.", []float64{0.1, 1, math.Inf(+1)})
	h.Observe(0.05)
	h.Observe(0.1) // on a bound: counted in le="0.1"
	h.ObserveDuration(500 * time.Millisecond)
	h.Observe(7)
	h.Observe(math.NaN()) // ignored

	lh := r.HistogramBuckets("drover_rpc_seconds", "RPC time.", []float64{0.5}, "op")
	lh.WithLabels("apply").Observe(0.25)

	const want = `# HELP drover_goroutines Goroutines.
# TYPE drover_goroutines gauge
drover_goroutines 42
# HELP drover_http_requests_total HTTP requests served.
# TYPE drover_http_requests_total counter
drover_http_requests_total{method="GET",code="200"} 3
drover_http_requests_total{method="GET",code="404"} 1
drover_http_requests_total{method="PUT",code="400"} 1
drover_http_requests_total{method="we\"ird\\",code="a\nb"} 1
# HELP drover_leader 1 when this server is the leader.
# TYPE drover_leader gauge
drover_leader 1
# HELP drover_nodes Nodes by status.\nSecond line \\ backslash.
# TYPE drover_nodes gauge
drover_nodes{status="ready"} 2
# HELP drover_plan_apply_seconds Plan apply time.
# TYPE drover_plan_apply_seconds histogram
drover_plan_apply_seconds_bucket{le="0.1"} 2
drover_plan_apply_seconds_bucket{le="1"} 3
drover_plan_apply_seconds_bucket{le="+Inf"} 4
drover_plan_apply_seconds_sum 7.65
drover_plan_apply_seconds_count 4
# HELP drover_rpc_seconds RPC time.
# TYPE drover_rpc_seconds histogram
drover_rpc_seconds_bucket{op="apply",le="0.5"} 1
drover_rpc_seconds_bucket{op="apply",le="+Inf"} 1
drover_rpc_seconds_sum{op="apply"} 0.25
drover_rpc_seconds_count{op="apply"} 1
`
	require.Equal(t, want, expose(t, r))
	require.Equal(t, want, expose(t, r), "output is deterministic")
}

func TestDefaultBucketsAndZeroValues(t *testing.T) {
	r := NewRegistry()
	r.Histogram("h_seconds", "H.")
	r.Counter("c_total", "C.")
	require.Equal(t, `# HELP c_total C.
# TYPE c_total counter
c_total 0
# HELP h_seconds H.
# TYPE h_seconds histogram
h_seconds_bucket{le="0.005"} 0
h_seconds_bucket{le="0.01"} 0
h_seconds_bucket{le="0.025"} 0
h_seconds_bucket{le="0.05"} 0
h_seconds_bucket{le="0.1"} 0
h_seconds_bucket{le="0.25"} 0
h_seconds_bucket{le="0.5"} 0
h_seconds_bucket{le="1"} 0
h_seconds_bucket{le="2.5"} 0
h_seconds_bucket{le="5"} 0
h_seconds_bucket{le="10"} 0
h_seconds_bucket{le="+Inf"} 0
h_seconds_sum 0
h_seconds_count 0
`, expose(t, r))
}

func TestValuesAndSpecialFloats(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("c_total", "C.")
	c.Add(2.5)
	c.Add(-1)         // ignored
	c.Add(math.NaN()) // ignored
	c.Inc()
	require.Equal(t, 3.5, c.Value())

	g := r.Gauge("g", "G.")
	g.Set(10)
	g.Add(-2.5)
	g.Inc()
	g.Dec()
	g.Dec()
	require.Equal(t, 6.5, g.Value())

	r.GaugeFunc("inf", "Inf.", func() float64 { return math.Inf(-1) })
	r.GaugeFunc("nan", "NaN.", func() float64 { return math.NaN() })
	r.GaugeFunc("big", "Big.", func() float64 { return 1e21 })
	out := expose(t, r)
	require.Contains(t, out, "\ninf -Inf\n")
	require.Contains(t, out, "\nnan NaN\n")
	require.Contains(t, out, "\nbig 1e+21\n")
	require.Contains(t, out, "\nc_total 3.5\n")
	require.Contains(t, out, "\ng 6.5\n")
}

func TestRegistration(t *testing.T) {
	r := NewRegistry()
	a := r.Counter("x_total", "X.", "l")
	b := r.Counter("x_total", "X again.", "l")
	a.WithLabels("v").Inc()
	b.WithLabels("v").Inc()
	require.Equal(t, 2.0, a.WithLabels("v").Value(), "same name and shape: same metric")

	r.GaugeFunc("f", "F.", func() float64 { return 1 })
	r.GaugeFunc("f", "F.", func() float64 { return 2 })
	require.Contains(t, expose(t, r), "\nf 2\n", "GaugeFunc re-registration replaces the function")

	panics := map[string]func(){
		"other kind":           func() { r.Gauge("x_total", "X.", "l") },
		"other labels":         func() { r.Counter("x_total", "X.", "m") },
		"other buckets":        func() { r.HistogramBuckets("h", "H.", []float64{1}); r.HistogramBuckets("h", "H.", []float64{2}) },
		"bad name":             func() { r.Counter("1bad", "B.") },
		"bad name char":        func() { r.Counter("a-b", "B.") },
		"bad label":            func() { r.Counter("ok", "B.", "a:b") },
		"reserved label":       func() { r.Counter("ok2", "B.", "__x") },
		"duplicate label":      func() { r.Counter("ok3", "B.", "a", "a") },
		"le on histogram":      func() { r.Histogram("ok4", "B.", "le") },
		"unsorted buckets":     func() { r.HistogramBuckets("ok5", "B.", []float64{1, 1}) },
		"wrong label count":    func() { a.WithLabels("v", "w") },
		"labelled without":     func() { a.Inc() },
		"labelled gauge value": func() { r.Gauge("g", "G.", "l").Set(1) },
	}
	for name, f := range panics {
		require.Panics(t, f, name)
	}

	require.True(t, r.Unregister("x_total"))
	require.False(t, r.Unregister("x_total"))
	require.NotContains(t, expose(t, r), "x_total")
}

func TestDelete(t *testing.T) {
	r := NewRegistry()
	g := r.Gauge("allocs", "Allocs.", "job")
	g.WithLabels("a").Set(1)
	g.WithLabels("b").Set(2)
	require.True(t, g.Delete("a"))
	require.False(t, g.Delete("a"))
	require.False(t, g.Delete("a", "extra"))
	out := expose(t, r)
	require.NotContains(t, out, `job="a"`)
	require.Contains(t, out, `allocs{job="b"} 2`)

	c := r.Counter("c_total", "C.", "k")
	c.WithLabels("x").Inc()
	require.True(t, c.Delete("x"))
	h := r.Histogram("h_seconds", "H.", "k")
	h.WithLabels("x").Observe(1)
	require.True(t, h.Delete("x"))
	u := r.Counter("u_total", "U.")
	require.False(t, u.Delete(), "an unlabelled metric has no series to delete")
}

func TestSnapshot(t *testing.T) {
	r := NewRegistry()
	r.start = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	now := r.start.Add(10 * time.Second)

	c := r.Counter("drover_evals_total", "Evals.", "type")
	c.WithLabels("system").Add(2)
	c.WithLabels("system").Add(4)
	r.Gauge("drover_leader", "Leader.").Set(1)
	r.GaugeFunc("drover_goroutines", "Goroutines.", func() float64 { return 7 })
	h := r.Histogram("drover_apply_seconds", "Apply.")
	h.Observe(1)
	h.Observe(3)

	got := r.snapshot(now)
	require.Equal(t, &Summary{
		Timestamp: "2026-01-02 03:04:10 +0000 UTC",
		Gauges: []GaugeValue{
			{Name: "drover_goroutines", Value: 7, Labels: map[string]string{}},
			{Name: "drover_leader", Value: 1, Labels: map[string]string{}},
		},
		Points: []PointValue{},
		Counters: []SampledValue{{
			Name: "drover_evals_total", Count: 2, Rate: 0.6, Sum: 6, Min: 2, Max: 4, Mean: 3,
			Stddev: math.Sqrt2, Labels: map[string]string{"type": "system"},
		}},
		Samples: []SampledValue{{
			Name: "drover_apply_seconds", Count: 2, Rate: 0.4, Sum: 4, Min: 1, Max: 3, Mean: 2,
			Stddev: math.Sqrt2, Labels: map[string]string{},
		}},
	}, got)

	// The JSON shape is Nomad's: what the nomad/api MetricsSummary decodes.
	raw, err := json.Marshal(r.Snapshot())
	require.NoError(t, err)
	var generic map[string]any
	require.NoError(t, json.Unmarshal(raw, &generic))
	require.ElementsMatch(t, []string{"Timestamp", "Gauges", "Points", "Counters", "Samples"}, keys(generic))
	counter := generic["Counters"].([]any)[0].(map[string]any)
	require.ElementsMatch(t, []string{"Name", "Count", "Rate", "Sum", "Min", "Max", "Mean", "Stddev", "Labels"}, keys(counter))
	gauge := generic["Gauges"].([]any)[0].(map[string]any)
	require.ElementsMatch(t, []string{"Name", "Value", "Labels"}, keys(gauge))
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestConcurrentUse(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("c_total", "C.", "worker")
	u := r.Counter("u_total", "U.")
	g := r.Gauge("g", "G.")
	h := r.Histogram("h_seconds", "H.", "worker")
	const workers, n = 8, 1000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			label := string(rune('a' + w%2))
			for range n {
				c.WithLabels(label).Inc()
				u.Inc()
				g.Add(1)
				h.WithLabels(label).Observe(0.01)
			}
		}()
	}
	// Readers run alongside the writers.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 50 {
			_ = r.WritePrometheus(&bytes.Buffer{})
			_ = r.Snapshot()
		}
	}()
	wg.Wait()

	require.Equal(t, float64(workers*n), u.Value())
	require.Equal(t, float64(workers*n), g.Value())
	require.Equal(t, float64(workers*n/2), c.WithLabels("a").Value())
	require.Equal(t, float64(workers*n/2), c.WithLabels("b").Value())
	out := expose(t, r)
	require.Contains(t, out, `h_seconds_count{worker="a"} 4000`)
	require.Contains(t, out, `h_seconds_bucket{worker="b",le="0.01"} 4000`)
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestWritePrometheus_WriteError(t *testing.T) {
	r := NewRegistry()
	r.Counter("c_total", "C.")
	require.EqualError(t, r.WritePrometheus(failWriter{}), "broken pipe")
}

func TestDefaultRegistry(t *testing.T) {
	require.NotNil(t, Default)
	Default.Counter("drover_metrics_test_total", "Test.").Inc()
	t.Cleanup(func() { Default.Unregister("drover_metrics_test_total") })
	require.Contains(t, expose(t, Default), "drover_metrics_test_total 1")
	require.Equal(t, "text/plain; version=0.0.4; charset=utf-8", ContentType)
}
