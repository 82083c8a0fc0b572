package metrics

import (
	"bytes"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// WritePrometheus writes every metric in the Prometheus text exposition
// format 0.0.4: families sorted by name, each with its HELP and TYPE lines,
// series sorted by label values. A labelled family with no series yet is
// left out.
func (r *Registry) WritePrometheus(w io.Writer) error {
	var b bytes.Buffer
	for _, f := range r.sortedFamilies() {
		if f.kind == kindGaugeFunc {
			writeHeader(&b, f)
			writeSample(&b, f.name, nil, nil, "", 0, f.callFn())
			continue
		}
		all := f.sortedSeries()
		if len(all) == 0 {
			continue
		}
		writeHeader(&b, f)
		for _, s := range all {
			switch f.kind {
			case kindGauge:
				writeSample(&b, f.name, f.labels, s.values, "", 0, math.Float64frombits(s.bits.Load()))
			case kindCounter:
				s.mu.Lock()
				sum := s.stats.sum
				s.mu.Unlock()
				writeSample(&b, f.name, f.labels, s.values, "", 0, sum)
			case kindHistogram:
				writeHistogram(&b, f, s)
			}
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

func writeHeader(b *bytes.Buffer, f *family) {
	b.WriteString("# HELP ")
	b.WriteString(f.name)
	b.WriteByte(' ')
	b.WriteString(helpEscaper.Replace(f.help))
	b.WriteString("\n# TYPE ")
	b.WriteString(f.name)
	b.WriteByte(' ')
	b.WriteString(f.kind.String())
	b.WriteByte('\n')
}

func writeHistogram(b *bytes.Buffer, f *family, s *series) {
	s.mu.Lock()
	counts := append([]uint64(nil), s.counts...)
	count, sum := s.stats.count, s.stats.sum
	s.mu.Unlock()

	var cum uint64
	for i, c := range counts {
		cum += c
		le := math.Inf(+1)
		if i < len(f.buckets) {
			le = f.buckets[i]
		}
		writeSample(b, f.name+"_bucket", f.labels, s.values, "le", le, float64(cum))
	}
	writeSample(b, f.name+"_sum", f.labels, s.values, "", 0, sum)
	writeSample(b, f.name+"_count", f.labels, s.values, "", 0, float64(count))
}

// writeSample writes `name{labels} value`; when le is non-empty it adds the
// histogram bucket label le="bound".
func writeSample(b *bytes.Buffer, name string, labels, values []string, le string, bound, v float64) {
	b.WriteString(name)
	if len(labels) > 0 || le != "" {
		b.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(l)
			b.WriteString(`="`)
			b.WriteString(labelEscaper.Replace(values[i]))
			b.WriteByte('"')
		}
		if le != "" {
			if len(labels) > 0 {
				b.WriteByte(',')
			}
			b.WriteString(le)
			b.WriteString(`="`)
			b.WriteString(formatFloat(bound))
			b.WriteByte('"')
		}
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.WriteString(formatFloat(v))
	b.WriteByte('\n')
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, +1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Summary is the JSON answer of GET /v1/metrics, shaped like Nomad's (and
// decodable into the nomad/api MetricsSummary). Values are cumulative since
// the registry was created.
type Summary struct {
	Timestamp string
	Gauges    []GaugeValue
	Points    []PointValue
	Counters  []SampledValue
	Samples   []SampledValue
}

// GaugeValue is one gauge series (gauge funcs included).
type GaugeValue struct {
	Name   string
	Value  float64
	Labels map[string]string
}

// PointValue exists for shape compatibility; Drover records no points.
type PointValue struct {
	Name   string
	Points []float64
}

// SampledValue aggregates a counter series (the values added: Count adds,
// totalling Sum) or a histogram series (the observations). Rate is Sum per
// second since the registry was created.
type SampledValue struct {
	Name   string
	Count  int
	Rate   float64
	Sum    float64
	Min    float64
	Max    float64
	Mean   float64
	Stddev float64
	Labels map[string]string
}

// Snapshot returns the current values of every metric, sorted by name and
// label values, for the JSON form of /v1/metrics.
func (r *Registry) Snapshot() *Summary {
	return r.snapshot(time.Now())
}

func (r *Registry) snapshot(now time.Time) *Summary {
	out := &Summary{
		Timestamp: now.UTC().Format("2006-01-02 15:04:05 -0700 MST"),
		Gauges:    []GaugeValue{},
		Points:    []PointValue{},
		Counters:  []SampledValue{},
		Samples:   []SampledValue{},
	}
	elapsed := max(now.Sub(r.start).Seconds(), 1)
	for _, f := range r.sortedFamilies() {
		if f.kind == kindGaugeFunc {
			out.Gauges = append(out.Gauges, GaugeValue{Name: f.name, Value: f.callFn(), Labels: map[string]string{}})
			continue
		}
		for _, s := range f.sortedSeries() {
			labels := make(map[string]string, len(f.labels))
			for i, l := range f.labels {
				labels[l] = s.values[i]
			}
			if f.kind == kindGauge {
				out.Gauges = append(out.Gauges, GaugeValue{
					Name: f.name, Value: math.Float64frombits(s.bits.Load()), Labels: labels,
				})
				continue
			}
			s.mu.Lock()
			st := s.stats
			s.mu.Unlock()
			v := st.sampled(f.name, labels, elapsed)
			if f.kind == kindCounter {
				out.Counters = append(out.Counters, v)
			} else {
				out.Samples = append(out.Samples, v)
			}
		}
	}
	return out
}

func (s stats) sampled(name string, labels map[string]string, elapsed float64) SampledValue {
	v := SampledValue{
		Name: name, Count: int(s.count), Sum: s.sum, Min: s.min, Max: s.max,
		Rate: s.sum / elapsed, Labels: labels,
	}
	if s.count > 0 {
		n := float64(s.count)
		v.Mean = s.sum / n
		if s.count > 1 {
			// Sample standard deviation from the running sums.
			variance := (s.sumSq - s.sum*s.sum/n) / (n - 1)
			v.Stddev = math.Sqrt(max(variance, 0))
		}
	}
	return v
}
