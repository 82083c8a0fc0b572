package structs

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
)

// Wave-size and partition extensions of a system job's rollout, asked for
// in group meta (DroverMetaPrefix):
//
//   - drover.max_parallel = "10%" sizes each wave as a percentage (1..100)
//     of the group's feasible nodes, rounded up and at least 1; a plain
//     whole number "3" is the same as update { max_parallel = 3 }. Either
//     form overrides update { max_parallel }, which must be above 0 (0
//     means no deployment).
//   - drover.partition = "5" keeps 5 nodes on older versions: the rollout
//     updates every node but the last 5, by node ID, of those still behind.
//     Lowering it (a new job version, like any meta change) lets the
//     rollout go on.
//
// Both are refused on jobs other than system jobs.
const (
	DroverMetaMaxParallel = DroverMetaPrefix + "max_parallel"
	DroverMetaPartition   = DroverMetaPrefix + "partition"
)

func init() {
	RegisterDroverMetaKey(DroverMetaMaxParallel, checkDroverMaxParallel)
	RegisterDroverMetaKey(DroverMetaPartition, checkDroverPartition)
}

// WaveSize is a parsed drover.max_parallel: N nodes, or Percent of the
// feasible nodes.
type WaveSize struct {
	N       int
	Percent int
}

// Of returns the wave size for feasible nodes: N, or Percent of feasible
// rounded up, at least 1.
func (w WaveSize) Of(feasible int) int {
	if w.Percent == 0 {
		return w.N
	}
	return max(1, (w.Percent*max(feasible, 0)+99)/100)
}

// ParseWaveSize parses a drover.max_parallel value: "P%" with P in 1..100
// or a whole number ≥ 1, digits only (no sign, space or fraction).
func ParseWaveSize(v string) (WaveSize, error) {
	num, pct := strings.CutSuffix(v, "%")
	n, ok := digits(num)
	switch {
	case !ok && pct:
		return WaveSize{}, fmt.Errorf("must be a whole percentage like \"10%%\" or a whole number of nodes, got %q", v)
	case !ok:
		return WaveSize{}, fmt.Errorf("must be a whole number of nodes or a percentage like \"10%%\", got %q", v)
	case pct && (n < 1 || n > 100):
		return WaveSize{}, fmt.Errorf("percentage must be between 1%% and 100%%, got %q", v)
	case pct:
		return WaveSize{Percent: n}, nil
	case n < 1:
		return WaveSize{}, fmt.Errorf("must be at least 1, got %q", v)
	}
	return WaveSize{N: n}, nil
}

// ParsePartition parses a drover.partition value: a whole number ≥ 0,
// digits only.
func ParsePartition(v string) (int, error) {
	n, ok := digits(v)
	if !ok {
		return 0, fmt.Errorf("must be a whole number of nodes (0 or more), got %q", v)
	}
	return n, nil
}

// digits parses a non-empty run of ASCII digits that fits an int32.
func digits(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// DroverWaveSize returns the wave size of tg for feasible nodes:
// drover.max_parallel when set and valid, else update { max_parallel }
// (0 without an update block).
func (tg *TaskGroup) DroverWaveSize(feasible int) int {
	if v, ok := tg.Meta[DroverMetaMaxParallel]; ok {
		if w, err := ParseWaveSize(v); err == nil {
			return w.Of(feasible)
		}
	}
	if tg.Update == nil {
		return 0
	}
	return tg.Update.MaxParallel
}

// DroverPartition returns drover.partition of tg, or 0 when unset or
// invalid (registration refuses an invalid one).
func (tg *TaskGroup) DroverPartition() int {
	v, ok := tg.Meta[DroverMetaPartition]
	if !ok {
		return 0
	}
	n, err := ParsePartition(v)
	if err != nil {
		return 0
	}
	return n
}

// SameApartFromDroverMeta reports whether tg and other have the same
// specification once their drover.* meta keys are set aside: an allocation
// of one runs what the other asks for, and only the rollout's controls
// differ.
func (tg *TaskGroup) SameApartFromDroverMeta(other *TaskGroup) bool {
	if tg == nil || other == nil {
		return tg == other
	}
	a, b := *tg, *other
	a.Meta, b.Meta = withoutDroverMeta(tg.Meta), withoutDroverMeta(other.Meta)
	return equalSpec(&a, &b)
}

func withoutDroverMeta(m map[string]string) map[string]string {
	out := maps.Clone(m)
	maps.DeleteFunc(out, func(k, _ string) bool { return strings.HasPrefix(k, DroverMetaPrefix) })
	return out
}

func checkDroverMaxParallel(v string, tg *TaskGroup, jobType string) []string {
	if jobType != JobTypeSystem {
		return []string{fmt.Sprintf("only system jobs roll out in waves of nodes, not %s jobs", jobType)}
	}
	if _, err := ParseWaveSize(v); err != nil {
		return []string{err.Error()}
	}
	if tg.Update == nil || tg.Update.MaxParallel <= 0 {
		return []string{"needs a deployment, but update { max_parallel } is 0 (all at once)"}
	}
	return nil
}

func checkDroverPartition(v string, _ *TaskGroup, jobType string) []string {
	if jobType != JobTypeSystem {
		return []string{fmt.Sprintf("only system jobs support a partition of nodes, not %s jobs", jobType)}
	}
	if _, err := ParsePartition(v); err != nil {
		return []string{err.Error()}
	}
	return nil
}
