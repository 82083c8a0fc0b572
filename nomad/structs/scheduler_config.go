package structs

import (
	"fmt"
	"slices"
)

// Scheduler algorithms (Nomad's names).
const (
	SchedulerAlgorithmBinpack = "binpack"
	SchedulerAlgorithmSpread  = "spread"
)

// PreemptionConfig says which schedulers may preempt lower-priority
// allocations.
type PreemptionConfig struct {
	SystemSchedulerEnabled   bool
	SysBatchSchedulerEnabled bool
	BatchSchedulerEnabled    bool
	ServiceSchedulerEnabled  bool
}

// SchedulerConfiguration is the cluster-wide scheduler configuration an
// operator sets with `operator scheduler set-config`; it lives in raft.
//
// What acts on it: PauseEvalBroker pauses the leader's evaluation broker
// (evaluations wait, nothing is scheduled). SchedulerAlgorithm is for the
// schedulers that choose among nodes (a system job goes on every feasible
// node, whatever the algorithm). RejectJobRegistration applies to tokens
// without management rights: without ACLs every caller has them, as in
// Nomad. The others are recorded and reported.
type SchedulerConfiguration struct {
	SchedulerAlgorithm            string
	PreemptionConfig              PreemptionConfig
	MemoryOversubscriptionEnabled bool
	RejectJobRegistration         bool
	PauseEvalBroker               bool
	NodeLimitForFeasibilityChecks uint
	CreateIndex                   uint64
	ModifyIndex                   uint64
}

// DefaultSchedulerConfiguration is the configuration of a cluster where
// none was set (Nomad's defaults).
func DefaultSchedulerConfiguration() *SchedulerConfiguration {
	return &SchedulerConfiguration{
		SchedulerAlgorithm: SchedulerAlgorithmBinpack,
		PreemptionConfig:   PreemptionConfig{SystemSchedulerEnabled: true},
	}
}

// Canonicalize fills the defaults of unset fields ("" algorithm: binpack).
func (c *SchedulerConfiguration) Canonicalize() {
	if c.SchedulerAlgorithm == "" {
		c.SchedulerAlgorithm = SchedulerAlgorithmBinpack
	}
}

// Validate refuses an unknown scheduler algorithm.
func (c *SchedulerConfiguration) Validate() error {
	if !slices.Contains([]string{"", SchedulerAlgorithmBinpack, SchedulerAlgorithmSpread}, c.SchedulerAlgorithm) {
		return fmt.Errorf("invalid scheduler algorithm: %v (want %q or %q)", c.SchedulerAlgorithm,
			SchedulerAlgorithmBinpack, SchedulerAlgorithmSpread)
	}
	return nil
}

// SchedulerConfigRequestType stores a SchedulerSetConfigRequest (explicit
// value: the range 90-99 is the operator's).
const SchedulerConfigRequestType MessageType = 90

// SchedulerSetConfigRequest replaces the scheduler configuration. With CAS
// it is replaced only when the stored configuration's ModifyIndex equals
// Config.ModifyIndex (0: none stored yet); the FSM answers a
// *SchedulerSetConfigResult.
type SchedulerSetConfigRequest struct {
	Config SchedulerConfiguration
	CAS    bool
}

// SchedulerSetConfigResult says whether a SchedulerSetConfigRequest
// changed the configuration.
type SchedulerSetConfigResult struct {
	Updated bool
}

// EvalDeleteRequestType deletes evaluations (an EvalDeleteRequest).
const EvalDeleteRequestType MessageType = 91

// EvalDeleteRequest deletes evaluations an operator chose while the
// evaluation broker is paused.
type EvalDeleteRequest struct {
	EvalIDs []string
}
