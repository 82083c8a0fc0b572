package command

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/assert"
)

func TestFormatKVAndList(t *testing.T) {
	assert.Equal(t, "ID   = web\nName = w", formatKV([]string{"ID|web", "Name|w"}))
	assert.Equal(t, "ID   Type\nweb  system", formatList([]string{"ID|Type", "web|system"}))
	assert.Equal(t, "a  b\n   c", formatList([]string{"a|b", "|c"}), "empty cells keep alignment")
}

func TestPrettyTimeDiff(t *testing.T) {
	ref := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := map[time.Duration]string{
		0:                                    "0s ago",
		5 * time.Second:                      "5s ago",
		61 * time.Second:                     "1m1s ago",
		time.Hour + 5*time.Second:            "1h ago",
		26*time.Hour + 3*time.Minute:         "1d2h ago",
		-30 * time.Second:                    "30s from now",
		2*time.Minute + 400*time.Millisecond: "2m ago",
	}
	for d, want := range cases {
		assert.Equal(t, want, prettyTimeDiff(ref.Add(-d), ref), d.String())
	}
	assert.Equal(t, "N/A", prettyTimeDiff(time.Time{}, ref))
}

func TestShortIDAndPrefixes(t *testing.T) {
	assert.Equal(t, "abcdef12", shortID("abcdef12-3456", false))
	assert.Equal(t, "abcdef12-3456", shortID("abcdef12-3456", true))
	assert.Equal(t, "abcdef12-", sanitizeUUIDPrefix("abcdef12-3"))
	assert.Equal(t, "abcdef12-34", sanitizeUUIDPrefix("abcdef12-34"))
	assert.Equal(t, "abcdef1234", deploymentPrefix("abcdef12-345"))
}

func TestEvalUpdateLines(t *testing.T) {
	eval := &api.Evaluation{ID: "e1", JobID: "web", Status: "pending", CreateIndex: 10}
	first := newEvalState(eval, nil)
	assert.Equal(t, []string{`Evaluation triggered by job "web"`}, evalUpdateLines(nil, first, false))

	eval.Status, eval.DeploymentID = "complete", "dddddddd-1111"
	allocs := []*api.AllocationListStub{
		{ID: "aaaaaaaa-2", NodeID: "nnnnnnnn-2", TaskGroup: "web", CreateIndex: 11, ClientStatus: "pending"},
		{ID: "bbbbbbbb-1", NodeID: "nnnnnnnn-1", TaskGroup: "web", CreateIndex: 5, ClientStatus: "running"},
	}
	second := newEvalState(eval, allocs)
	assert.Equal(t, []string{
		`Evaluation within deployment: "dddddddd"`,
		`Allocation "bbbbbbbb" modified: node "nnnnnnnn", group "web"`,
		`Allocation "aaaaaaaa" created: node "nnnnnnnn", group "web"`,
		`Evaluation status changed: "pending" -> "complete"`,
	}, evalUpdateLines(first, second, false))

	allocs[0].ClientStatus, allocs[0].ClientDescription = "running", "Tasks are running"
	third := newEvalState(eval, allocs)
	assert.Equal(t, []string{
		`Allocation "aaaaaaaa" status changed: "pending" -> "running" (Tasks are running)`,
	}, evalUpdateLines(second, third, false))
}

func TestFormatAllocMetrics(t *testing.T) {
	m := &api.AllocationMetric{
		NodesEvaluated: 3, NodesAvailable: map[string]int{"dc1": 3, "dc2": 0},
		ClassFiltered: map[string]int{"gpu": 2}, QuotaExhausted: []string{"cpu"},
	}
	want := "* No nodes are available in datacenter \"dc2\"\n" +
		"* Class \"gpu\": 2 nodes excluded by filter\n" +
		"* Quota limit hit \"cpu\""
	assert.Equal(t, want, formatAllocMetrics(m, false))
}
