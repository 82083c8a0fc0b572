package structs

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Rollout gates (docs/semantics.md, "Metric and webhook gates"): group
// meta keys that make a deployment wait, before each later wave and before
// auto-promotion, for a Prometheus query to meet a condition and for a
// webhook to answer 2xx. The deployment watcher runs them; the scheduler
// holds a gated group's next wave until the watcher records that its gates
// passed (DeploymentGate.PassedAt).
const (
	DroverMetaAnalysisQuery        = "drover.analysis_query"
	DroverMetaAnalysisCondition    = "drover.analysis_condition"
	DroverMetaAnalysisInterval     = "drover.analysis_interval"
	DroverMetaAnalysisFailureLimit = "drover.analysis_failure_limit"
	DroverMetaGateWebhook          = "drover.gate_webhook"
)

// Defaults of the optional analysis keys.
const (
	DefaultAnalysisInterval     = 30 * time.Second
	DefaultAnalysisFailureLimit = 0
	// MinAnalysisInterval bounds how often a gate may query Prometheus.
	MinAnalysisInterval = time.Second
)

// GatePlaceholders are the words a drover.analysis_query may use; the
// watcher replaces them by the deployment's values (quoted nowhere: write
// job="$job" in the query).
var GatePlaceholders = []string{"$job", "$namespace", "$group", "$version", "$deployment"}

// AnalysisCondition is a parsed drover.analysis_condition: "<op> <number>"
// with op one of < <= > >= == !=.
type AnalysisCondition struct {
	Op    string
	Value float64
}

// Holds reports whether v meets the condition. NaN meets none.
func (c AnalysisCondition) Holds(v float64) bool {
	if math.IsNaN(v) {
		return false
	}
	switch c.Op {
	case "<":
		return v < c.Value
	case "<=":
		return v <= c.Value
	case ">":
		return v > c.Value
	case ">=":
		return v >= c.Value
	case "==":
		return v == c.Value
	case "!=":
		return v != c.Value
	}
	return false
}

// String is the condition as written canonically ("< 0.01").
func (c AnalysisCondition) String() string {
	return c.Op + " " + strconv.FormatFloat(c.Value, 'g', -1, 64)
}

// ParseAnalysisCondition parses "<op> <number>" (spaces optional).
func ParseAnalysisCondition(s string) (AnalysisCondition, error) {
	s = strings.TrimSpace(s)
	for _, op := range []string{"<=", ">=", "==", "!=", "<", ">"} { // two-letter operators first
		if rest, ok := strings.CutPrefix(s, op); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return AnalysisCondition{}, fmt.Errorf("%q: want a finite number after %q", s, op)
			}
			return AnalysisCondition{Op: op, Value: v}, nil
		}
	}
	return AnalysisCondition{}, fmt.Errorf("%q: want <op> <number> with op one of < <= > >= == !=", s)
}

// GroupGates are the parsed gate keys of one group.
type GroupGates struct {
	Query        string // "" for no metric gate
	Condition    AnalysisCondition
	Interval     time.Duration
	FailureLimit int
	Webhook      string // "" for no webhook gate
}

// Any reports whether the group has a gate.
func (g GroupGates) Any() bool { return g.Query != "" || g.Webhook != "" }

// DroverGates parses tg's gate keys. They were validated at registration;
// a value that does not parse (a job stored before the key existed) falls
// back to the default, or leaves the metric gate out when the condition
// does not parse.
func (tg *TaskGroup) DroverGates() GroupGates {
	g := GroupGates{Interval: DefaultAnalysisInterval, FailureLimit: DefaultAnalysisFailureLimit}
	if tg == nil {
		return g
	}
	g.Webhook = strings.TrimSpace(tg.Meta[DroverMetaGateWebhook])
	if q := strings.TrimSpace(tg.Meta[DroverMetaAnalysisQuery]); q != "" {
		if c, err := ParseAnalysisCondition(tg.Meta[DroverMetaAnalysisCondition]); err == nil {
			g.Query, g.Condition = q, c
		}
	}
	if d, err := time.ParseDuration(tg.Meta[DroverMetaAnalysisInterval]); err == nil && d >= MinAnalysisInterval {
		g.Interval = d
	}
	if n, err := strconv.Atoi(tg.Meta[DroverMetaAnalysisFailureLimit]); err == nil && n >= 0 {
		g.FailureLimit = n
	}
	return g
}

// Gate kinds and results recorded in DeploymentGate.
const (
	GateMetric  = "metric"
	GateWebhook = "webhook"

	GateResultPending      = "pending"      // asked, no answer yet
	GateResultPass         = "pass"         // condition met / 2xx
	GateResultFail         = "fail"         // condition not met / non-2xx
	GateResultInconclusive = "inconclusive" // no data, query error
	GateResultTimeout      = "timeout"      // no answer in time
)

// DeploymentGate is the gate state of one group of a deployment, written
// by the deployment watcher through raft (DeploymentStatusUpdate.Gates) so
// that a new leader carries on: what passed, how many metric evaluations
// failed, and whether a gate holds the deployment paused. The results of
// the checkpoint under way (which gate answered what since the group
// reached it) are the watcher's and are asked again after a failover.
type DeploymentGate struct {
	// PassedAt is the group's HealthyAllocs when its gates last passed.
	// The scheduler starts the group's next wave only while HealthyAllocs
	// <= PassedAt (the first wave, at 0 healthy, needs no pass).
	PassedAt int
	// Passed counts the checkpoints (later waves, promotion) passed.
	Passed int
	// Evaluations and Failures count the metric gate's evaluations and the
	// failed ones; more than drover.analysis_failure_limit failures fail
	// the deployment.
	Evaluations int
	Failures    int
	// PausedBy is the gate (GateMetric, GateWebhook) of this group that
	// paused the deployment, "" for none; the watcher resumes the
	// deployment when that gate passes. A resume by the operator clears
	// it.
	PausedBy string `json:",omitempty"`
	// Gate, Result and Reason describe the last answer: which gate
	// (GateMetric, GateWebhook), its result, and in words ("error_rate
	// 0.2 !< 0.01", "webhook answered 503: busy").
	Gate   string `json:",omitempty"`
	Result string `json:",omitempty"`
	Reason string `json:",omitempty"`
	// Checkpoint names what the group waits for ("wave 3", "promotion"),
	// "" when it waits for nothing.
	Checkpoint string `json:",omitempty"`
	// UpdatedAt is when the watcher wrote the record (unix nanoseconds).
	UpdatedAt int64
}

// Copy returns a copy of g (nil for nil).
func (g *DeploymentGate) Copy() *DeploymentGate {
	if g == nil {
		return nil
	}
	c := *g
	return &c
}

// GatePassedAt is st's DeploymentGate.PassedAt, 0 without a record.
func (st *DeploymentState) GatePassedAt() int {
	if st == nil || st.Gate == nil {
		return 0
	}
	return st.Gate.PassedAt
}

// GateHoldsWave reports whether the gates of group tg (state st) hold its
// next wave: the group has a gate and some allocation became healthy since
// the gates last passed.
func GateHoldsWave(tg *TaskGroup, st *DeploymentState) bool {
	if st == nil || !tg.DroverGates().Any() {
		return false
	}
	return st.HealthyAllocs > st.GatePassedAt()
}

func init() {
	RegisterDroverMetaKey(DroverMetaAnalysisQuery, func(v string, tg *TaskGroup, jobType string) []string {
		var out []string
		if strings.TrimSpace(v) == "" {
			out = append(out, "must not be empty")
		}
		if _, ok := tg.Meta[DroverMetaAnalysisCondition]; !ok {
			out = append(out, fmt.Sprintf("needs %s (for example \"< 0.01\")", DroverMetaAnalysisCondition))
		}
		return append(out, checkGateJobType(tg, jobType)...)
	})
	RegisterDroverMetaKey(DroverMetaAnalysisCondition, func(v string, tg *TaskGroup, _ string) []string {
		var out []string
		if _, err := ParseAnalysisCondition(v); err != nil {
			out = append(out, err.Error())
		}
		return append(out, needsQuery(tg)...)
	})
	RegisterDroverMetaKey(DroverMetaAnalysisInterval, func(v string, tg *TaskGroup, _ string) []string {
		var out []string
		d, err := time.ParseDuration(strings.TrimSpace(v))
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%q is not a duration (for example \"30s\")", v))
		case d < MinAnalysisInterval:
			out = append(out, fmt.Sprintf("%s is below the minimum of %s", d, MinAnalysisInterval))
		}
		return append(out, needsQuery(tg)...)
	})
	RegisterDroverMetaKey(DroverMetaAnalysisFailureLimit, func(v string, tg *TaskGroup, _ string) []string {
		var out []string
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err != nil || n < 0 {
			out = append(out, fmt.Sprintf("%q is not a whole number >= 0", v))
		}
		return append(out, needsQuery(tg)...)
	})
	RegisterDroverMetaKey(DroverMetaGateWebhook, func(v string, tg *TaskGroup, jobType string) []string {
		var out []string
		u, err := url.Parse(strings.TrimSpace(v))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			out = append(out, fmt.Sprintf("%q is not an http:// or https:// URL", v))
		}
		return append(out, checkGateJobType(tg, jobType)...)
	})
}

func needsQuery(tg *TaskGroup) []string {
	if _, ok := tg.Meta[DroverMetaAnalysisQuery]; !ok {
		return []string{fmt.Sprintf("has no effect without %s", DroverMetaAnalysisQuery)}
	}
	return nil
}

// checkGateJobType refuses gates where there is no deployment to gate:
// only system and service groups with an update block roll out in
// deployments.
func checkGateJobType(tg *TaskGroup, jobType string) []string {
	if jobType != JobTypeSystem && jobType != JobTypeService {
		return []string{fmt.Sprintf("gates apply to deployments, which %s jobs do not have", jobType)}
	}
	if !tg.UsesDeployment() {
		return []string{"gates apply to deployments; the group needs an update block with max_parallel > 0"}
	}
	return nil
}
