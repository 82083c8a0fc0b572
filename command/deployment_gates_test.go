package command

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/wire"
)

func TestFormatGates(t *testing.T) {
	require.Empty(t, formatGates(&wire.DeploymentGates{}))
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	out := formatGates(&wire.DeploymentGates{DeploymentID: "d1", Gates: map[string]*structs.DeploymentGate{
		"web": {Checkpoint: "wave 2", Gate: structs.GateWebhook, Result: structs.GateResultFail, PausedBy: structs.GateWebhook,
			Reason: "answered 503: busy", Passed: 1, PassedAt: 1, UpdatedAt: at},
		"api": {Gate: structs.GateMetric, Result: structs.GateResultPass, Evaluations: 4, Failures: 1, Reason: "value 0 < 0.01"},
	}})
	require.Contains(t, out, "Gates\n")
	require.Regexp(t, `api +- +metric +pass +1/4 +0 +- +value 0 < 0.01 +-`, out)
	require.Regexp(t, `web +wave 2 +webhook +fail +0/0 +1 +webhook +answered 503: busy +2026-03-01T10:00:00Z`, out)
}
