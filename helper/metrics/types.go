package metrics

import (
	"math"
	"sort"
	"time"
)

// Counter is a monotonically increasing value. A Counter registered with
// labels is a family: use WithLabels to reach one series.
type Counter struct {
	f *family
	s *series
}

// Counter registers (or returns the existing) counter called name.
func (r *Registry) Counter(name, help string, labels ...string) *Counter {
	f := r.register(name, help, kindCounter, labels, nil)
	return &Counter{f: f, s: rootSeries(f)}
}

// WithLabels returns the series for the label values, given in the order
// the labels were registered; it panics when their number is wrong.
func (c *Counter) WithLabels(values ...string) *Counter {
	return &Counter{f: c.f, s: c.f.get(values)}
}

// Inc adds 1.
func (c *Counter) Inc() { c.Add(1) }

// Add adds v. Negative and NaN values are ignored: counters only go up.
func (c *Counter) Add(v float64) {
	if !(v >= 0) {
		return
	}
	s := c.f.root(c.s)
	s.mu.Lock()
	s.stats.add(v)
	s.mu.Unlock()
}

// Value returns the counter's total.
func (c *Counter) Value() float64 {
	s := c.f.root(c.s)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats.sum
}

// Delete removes the series with the label values and reports whether it
// existed.
func (c *Counter) Delete(values ...string) bool { return c.f.delete(values) }

// Gauge is a value that goes up and down.
type Gauge struct {
	f *family
	s *series
}

// Gauge registers (or returns the existing) gauge called name.
func (r *Registry) Gauge(name, help string, labels ...string) *Gauge {
	f := r.register(name, help, kindGauge, labels, nil)
	return &Gauge{f: f, s: rootSeries(f)}
}

// GaugeFunc registers a gauge whose value is fn(), called at each
// exposition or snapshot (so fn must be safe for concurrent use and quick).
// Registering the same name again replaces fn.
func (r *Registry) GaugeFunc(name, help string, fn func() float64) {
	f := r.register(name, help, kindGaugeFunc, nil, nil)
	f.fnMu.Lock()
	f.fn = fn
	f.fnMu.Unlock()
}

// WithLabels returns the series for the label values.
func (g *Gauge) WithLabels(values ...string) *Gauge {
	return &Gauge{f: g.f, s: g.f.get(values)}
}

// Set sets the gauge to v.
func (g *Gauge) Set(v float64) { g.f.root(g.s).bits.Store(math.Float64bits(v)) }

// Add adds v (which may be negative).
func (g *Gauge) Add(v float64) {
	s := g.f.root(g.s)
	for {
		old := s.bits.Load()
		if s.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Inc adds 1.
func (g *Gauge) Inc() { g.Add(1) }

// Dec subtracts 1.
func (g *Gauge) Dec() { g.Add(-1) }

// Value returns the gauge's value.
func (g *Gauge) Value() float64 { return math.Float64frombits(g.f.root(g.s).bits.Load()) }

// Delete removes the series with the label values and reports whether it
// existed.
func (g *Gauge) Delete(values ...string) bool { return g.f.delete(values) }

// Histogram counts observations (usually durations in seconds) into fixed
// buckets, and keeps their count and sum.
type Histogram struct {
	f *family
	s *series
}

// Histogram registers (or returns the existing) histogram called name,
// with DefBuckets.
func (r *Registry) Histogram(name, help string, labels ...string) *Histogram {
	return r.HistogramBuckets(name, help, nil, labels...)
}

// HistogramBuckets is Histogram with the given bucket upper bounds, which
// must be strictly increasing; +Inf is implicit. Nil means DefBuckets.
func (r *Registry) HistogramBuckets(name, help string, buckets []float64, labels ...string) *Histogram {
	f := r.register(name, help, kindHistogram, labels, checkBuckets(name, buckets))
	return &Histogram{f: f, s: rootSeries(f)}
}

// WithLabels returns the series for the label values.
func (h *Histogram) WithLabels(values ...string) *Histogram {
	return &Histogram{f: h.f, s: h.f.get(values)}
}

// Observe records one value, in seconds for durations. NaN is ignored.
func (h *Histogram) Observe(v float64) {
	if math.IsNaN(v) {
		return
	}
	s := h.f.root(h.s)
	i := sort.SearchFloat64s(h.f.buckets, v) // first bound >= v; len = +Inf
	s.mu.Lock()
	s.counts[i]++
	s.stats.add(v)
	s.mu.Unlock()
}

// ObserveDuration records d in seconds.
func (h *Histogram) ObserveDuration(d time.Duration) { h.Observe(d.Seconds()) }

// Delete removes the series with the label values and reports whether it
// existed.
func (h *Histogram) Delete(values ...string) bool { return h.f.delete(values) }

// rootSeries is the series of an unlabelled family, nil for a labelled one.
func rootSeries(f *family) *series {
	if len(f.labels) > 0 {
		return nil
	}
	return f.get(nil)
}
