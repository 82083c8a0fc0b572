package structs

import (
	"fmt"
	"time"
)

// AutopilotConfiguration is the operator's autopilot configuration, kept
// in raft. Server health (/v1/operator/autopilot/health) is judged by
// LastContactThreshold and MaxTrailingLogs, and a server is stable once
// healthy for ServerStabilizationTime. Drover has no automatic server
// removal or promotion yet: CleanupDeadServers and the others are recorded
// and reported only (dead servers are removed with force-leave or
// `operator raft remove-peer`).
type AutopilotConfiguration struct {
	CleanupDeadServers      bool
	LastContactThreshold    time.Duration
	MaxTrailingLogs         uint64
	MinQuorum               uint
	ServerStabilizationTime time.Duration
	EnableRedundancyZones   bool
	DisableUpgradeMigration bool
	EnableCustomUpgrades    bool
	CreateIndex             uint64
	ModifyIndex             uint64
}

// DefaultAutopilotConfiguration is Nomad's default.
func DefaultAutopilotConfiguration() *AutopilotConfiguration {
	return &AutopilotConfiguration{
		CleanupDeadServers:      true,
		LastContactThreshold:    200 * time.Millisecond,
		MaxTrailingLogs:         250,
		ServerStabilizationTime: 10 * time.Second,
	}
}

// Validate refuses negative durations.
func (c *AutopilotConfiguration) Validate() error {
	if c.LastContactThreshold < 0 {
		return fmt.Errorf("LastContactThreshold must not be negative, got %v", c.LastContactThreshold)
	}
	if c.ServerStabilizationTime < 0 {
		return fmt.Errorf("ServerStabilizationTime must not be negative, got %v", c.ServerStabilizationTime)
	}
	return nil
}

// AutopilotConfigRequestType stores an AutopilotSetConfigRequest (the
// operator's range 90-99).
const AutopilotConfigRequestType MessageType = 94

// AutopilotSetConfigRequest replaces the autopilot configuration; with CAS
// only when the stored ModifyIndex is Config.ModifyIndex. The FSM answers
// a *SchedulerSetConfigResult (Updated).
type AutopilotSetConfigRequest struct {
	Config AutopilotConfiguration
	CAS    bool
}
