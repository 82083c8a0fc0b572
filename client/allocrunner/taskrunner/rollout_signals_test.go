package taskrunner

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/docker"
	"github.com/drover-project/drover/nomad/structs"
)

// TestEventsCountAsRolloutSignals ties the events the task runner records
// to the rollout signals the deployment watcher counts
// (structs.AllocRolloutSignals): an OOM-killed exit is an oom, a failed
// image pull of the docker driver (at start or at prepare) is a
// pull_failure, other exits and driver failures are neither.
func TestEventsCountAsRolloutSignals(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	pull := &docker.PullError{Image: "127.0.0.1:5000/web:v2", Err: errors.New("manifest unknown")}
	st := &structs.TaskState{Restarts: 2, Events: []*structs.TaskEvent{
		eventTerminated(now, &drivers.ExitResult{ExitCode: 137, OOMKilled: true}),
		eventTerminated(now, &drivers.ExitResult{ExitCode: 1}),
		NewDriverFailure(now, drivers.NewRecoverableError(pull, true)),
		NewDriverFailure(now, fmt.Errorf("failed to prepare task: %w", pull)),
		NewDriverFailure(now, errors.New("exec format error")),
	}}
	got := structs.AllocRolloutSignals(&structs.Allocation{TaskStates: map[string]*structs.TaskState{"server": st}})
	require.Equal(t, map[string]int{structs.SignalRestarts: 2, structs.SignalOOM: 1, structs.SignalPullFailures: 2}, got)
}
