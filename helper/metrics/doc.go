// Package metrics is a small, dependency-free metrics registry: counters,
// gauges (settable or computed by a function) and histograms, with optional
// labels, safe for concurrent use.
//
// A Registry renders its metrics two ways:
//
//   - WritePrometheus: the Prometheus text exposition format 0.0.4, for
//     GET /v1/metrics?format=prometheus (serve it with ContentType);
//   - Snapshot: a JSON-friendly Summary shaped like Nomad's GET /v1/metrics
//     answer (Timestamp, Gauges, Points, Counters, Samples), so that the
//     nomad/api client's MetricsSummary decodes it.
//
// Names are used as given; the house convention is a "drover_" prefix, a
// "_total" suffix for counters and "_seconds" for durations:
//
//	var applies = metrics.Default.Counter("drover_raft_applies_total", "Raft log entries applied.", "type")
//	applies.WithLabels("job_register").Inc()
//
//	var lag = metrics.Default.Histogram("drover_plan_apply_seconds", "Time to apply a plan.")
//	start := time.Now()
//	...
//	lag.ObserveDuration(time.Since(start))
//
// Registering an invalid name or label, or the same name again with a
// different kind, labels or buckets, panics: those are programming errors
// best found at start-up. Registering the same metric again returns the
// existing one, so packages may declare their metrics independently.
//
// Any package may import this one; it imports only the standard library.
package metrics
