package structs

import (
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// ScalingPolicyTypeHorizontal is the type of a group's `scaling` block.
const ScalingPolicyTypeHorizontal = "horizontal"

// JobTrackedScalingEvents is how many scaling events are kept per group,
// newest first, as Nomad keeps them.
const JobTrackedScalingEvents = 20

// ScalingPolicy is a group's `scaling` block: the bounds of its count and
// an opaque policy for an external autoscaler.
type ScalingPolicy struct {
	Min     int64
	Max     *int64 // required
	Policy  map[string]any
	Enabled bool
	Type    string
}

// ScalingPolicyID returns the stable ID of the scaling policy of group in
// job (ns, jobID): a name-based UUID, so that it survives new job versions
// without being stored.
func ScalingPolicyID(ns, jobID, group string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("drover-scaling:"+ns+"\x00"+jobID+"\x00"+group)).String()
}

// validate returns the problems of a group's scaling block for a group of
// count, Nomad's wording.
func (p *ScalingPolicy) validate(count int) []string {
	var out []string
	switch {
	case p.Max == nil || *p.Max < 0:
		out = append(out, "maximum count must be specified and non-negative")
	case *p.Max < p.Min:
		out = append(out, "maximum count must not be less than minimum count")
	default:
		if int64(count) > *p.Max {
			out = append(out, "task group count must not be greater than maximum count in scaling policy")
		}
	}
	if p.Min < 0 {
		out = append(out, "minimum count must be specified and non-negative")
	} else if int64(count) < p.Min {
		out = append(out, "task group count must not be less than minimum count in scaling policy")
	}
	if p.Type != "" && p.Type != ScalingPolicyTypeHorizontal {
		out = append(out, fmt.Sprintf("scaling policy type %q is not supported: only %q", p.Type, ScalingPolicyTypeHorizontal))
	}
	return out
}

// ScalingEvent is one scaling action or error reported for a group.
type ScalingEvent struct {
	Time          uint64 // unix nanoseconds
	Count         *int64 // the requested count, or nil (an error or a note)
	PreviousCount int64
	Error         bool
	Message       string
	Meta          map[string]any
	EvalID        *string
	CreateIndex   uint64
}

// JobScalingEvents holds the recent scaling events of a job per group.
type JobScalingEvents struct {
	Namespace     string
	JobID         string
	ScalingEvents map[string][]*ScalingEvent // newest first
	ModifyIndex   uint64
}

// ScalingEventRequest records a scaling event for a group and, when the
// count changes, registers the new job version and its evaluation in the
// same raft entry.
type ScalingEventRequest struct {
	Namespace  string
	JobID      string
	Group      string
	Event      *ScalingEvent
	Job        *Job
	Eval       *Evaluation
	SubmitTime int64
	// BaseJobModifyIndex, when Job is set and it is not 0, is the
	// JobModifyIndex of the version Job was made from: the FSM applies
	// the entry only if the job is still at it, and refuses it with
	// ErrJobChanged otherwise (nothing written), so a scale never
	// overwrites a version registered meanwhile.
	BaseJobModifyIndex uint64
}

// ErrJobChanged is the FSM's refusal of a scale made from a job version
// that is no longer the current one.
var ErrJobChanged = errors.New("the job changed while the scale was prepared")
