package metrics

import (
	"encoding/json"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// The JSON form of /v1/metrics must decode into the official client's type.
func TestSnapshot_DecodesAsNomadAPI(t *testing.T) {
	r := NewRegistry()
	r.Counter("c_total", "C.", "k").WithLabels("v").Add(3)
	r.Gauge("g", "G.").Set(1.5)
	r.Histogram("h_seconds", "H.").Observe(2)

	raw, err := json.Marshal(r.Snapshot())
	require.NoError(t, err)
	var got api.MetricsSummary
	require.NoError(t, json.Unmarshal(raw, &got))

	require.NotEmpty(t, got.Timestamp)
	require.Len(t, got.Gauges, 1)
	require.Equal(t, "g", got.Gauges[0].Name)
	require.InDelta(t, 1.5, got.Gauges[0].Value, 1e-6)
	require.Len(t, got.Counters, 1)
	require.Equal(t, "c_total", got.Counters[0].Name)
	require.Equal(t, 1, got.Counters[0].Count)
	require.Equal(t, 3.0, got.Counters[0].Sum)
	require.Equal(t, map[string]string{"k": "v"}, got.Counters[0].DisplayLabels)
	require.Len(t, got.Samples, 1)
	require.Equal(t, 2.0, got.Samples[0].Max)
}
