package metrics

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ContentType is the HTTP Content-Type of WritePrometheus output.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// DefBuckets are the default histogram upper bounds, in seconds.
var DefBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// Default is the process-wide registry.
var Default = NewRegistry()

type kind int

const (
	kindCounter kind = iota
	kindGauge
	kindGaugeFunc
	kindHistogram
)

func (k kind) String() string {
	return [...]string{"counter", "gauge", "gauge", "histogram"}[k]
}

// Registry holds named metric families. The zero value is not usable; call
// NewRegistry.
type Registry struct {
	start    time.Time
	mu       sync.RWMutex
	families map[string]*family
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{start: time.Now(), families: map[string]*family{}}
}

// family is one metric name with its series, one per label-value tuple.
type family struct {
	name, help string
	kind       kind
	labels     []string
	buckets    []float64 // histograms: finite upper bounds, ascending

	fnMu sync.Mutex
	fn   func() float64 // gauge funcs

	mu     sync.RWMutex
	series map[string]*series
}

// series is one time series. Gauges use bits; counters and histograms use
// the mutex-guarded stats (and histograms also counts).
type series struct {
	values []string
	bits   atomic.Uint64 // gauge value, math.Float64bits

	mu     sync.Mutex
	stats  stats
	counts []uint64 // histogram: per bucket, not cumulative; last is +Inf
}

// stats aggregate the values added to a counter or observed by a histogram.
type stats struct {
	count                uint64
	sum, sumSq, min, max float64
}

func (s *stats) add(v float64) {
	if s.count == 0 || v < s.min {
		s.min = v
	}
	if s.count == 0 || v > s.max {
		s.max = v
	}
	s.count++
	s.sum += v
	s.sumSq += v * v
}

// register returns the family called name, creating it when new. It panics
// when the name exists with another shape.
func (r *Registry) register(name, help string, k kind, labels []string, buckets []float64) *family {
	checkName(name)
	checkLabels(name, labels, k == kindHistogram)
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.families[name]; ok {
		if f.kind != k || !slices.Equal(f.labels, labels) || !slices.Equal(f.buckets, buckets) {
			panic(fmt.Sprintf("metrics: %s re-registered as a %s with labels %v; it is a %s with labels %v",
				name, k, labels, f.kind, f.labels))
		}
		return f
	}
	f := &family{
		name: name, help: help, kind: k,
		labels:  slices.Clone(labels),
		buckets: slices.Clone(buckets),
		series:  map[string]*series{},
	}
	if len(labels) == 0 && k != kindGaugeFunc {
		f.get(nil) // an unlabelled metric is exported from the start, at zero
	}
	r.families[name] = f
	return f
}

// Unregister removes the metric called name and reports whether it existed.
func (r *Registry) Unregister(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.families[name]
	delete(r.families, name)
	return ok
}

// get returns the series for the label values, creating it when new.
func (f *family) get(values []string) *series {
	if len(values) != len(f.labels) {
		panic(fmt.Sprintf("metrics: %s has labels %v, got %d values %q", f.name, f.labels, len(values), values))
	}
	key := strings.Join(values, "\xff")
	f.mu.RLock()
	s, ok := f.series[key]
	f.mu.RUnlock()
	if ok {
		return s
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok = f.series[key]; ok {
		return s
	}
	s = &series{values: slices.Clone(values)}
	if f.kind == kindHistogram {
		s.counts = make([]uint64, len(f.buckets)+1)
	}
	f.series[key] = s
	return s
}

func (f *family) delete(values []string) bool {
	if len(f.labels) == 0 || len(values) != len(f.labels) {
		return false
	}
	key := strings.Join(values, "\xff")
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.series[key]
	delete(f.series, key)
	return ok
}

// root returns the series of an unlabelled metric; a metric with labels
// must be used through WithLabels.
func (f *family) root(s *series) *series {
	if s == nil {
		panic(fmt.Sprintf("metrics: %s has labels %v; use WithLabels", f.name, f.labels))
	}
	return s
}

// sortedSeries returns the family's series ordered by label values.
func (f *family) sortedSeries() []*series {
	f.mu.RLock()
	out := make([]*series, 0, len(f.series))
	for _, s := range f.series {
		out = append(out, s)
	}
	f.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return slices.Compare(out[i].values, out[j].values) < 0 })
	return out
}

// sortedFamilies returns the registry's families ordered by name.
func (r *Registry) sortedFamilies() []*family {
	r.mu.RLock()
	out := make([]*family, 0, len(r.families))
	for _, f := range r.families {
		out = append(out, f)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (f *family) callFn() float64 {
	f.fnMu.Lock()
	fn := f.fn
	f.fnMu.Unlock()
	return fn()
}

func checkName(name string) {
	if !validName(name, true) {
		panic(fmt.Sprintf("metrics: invalid metric name %q (want [a-zA-Z_:][a-zA-Z0-9_:]*)", name))
	}
}

func checkLabels(name string, labels []string, histogram bool) {
	seen := map[string]bool{}
	for _, l := range labels {
		switch {
		case !validName(l, false) || strings.HasPrefix(l, "__"):
			panic(fmt.Sprintf("metrics: %s: invalid label name %q", name, l))
		case histogram && l == "le":
			panic(fmt.Sprintf("metrics: %s: label \"le\" is reserved for histogram buckets", name))
		case seen[l]:
			panic(fmt.Sprintf("metrics: %s: duplicate label %q", name, l))
		}
		seen[l] = true
	}
}

func validName(s string, colon bool) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		ok := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(colon && c == ':') || (i > 0 && c >= '0' && c <= '9')
		if !ok {
			return false
		}
	}
	return true
}

func checkBuckets(name string, buckets []float64) []float64 {
	if len(buckets) == 0 {
		return slices.Clone(DefBuckets)
	}
	out := slices.Clone(buckets)
	if math.IsInf(out[len(out)-1], +1) {
		out = out[:len(out)-1] // +Inf is implicit
	}
	for i, b := range out {
		if math.IsNaN(b) || math.IsInf(b, 0) || (i > 0 && b <= out[i-1]) {
			panic(fmt.Sprintf("metrics: %s: buckets must be finite and strictly increasing, got %v", name, buckets))
		}
	}
	return out
}
