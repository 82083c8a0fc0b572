//go:build !linux

package exec

import (
	"context"
	"fmt"

	"github.com/drover-project/drover/drivers"
)

// ExecTask refuses: exec tasks run only on Linux. Without this method the
// raw_exec one would be promoted from the embedded driver and run the
// command outside the task's isolation.
func (d *Driver) ExecTask(ctx context.Context, taskID string, opts *drivers.ExecOptions) (*drivers.ExitResult, error) {
	return nil, fmt.Errorf("%w: exec tasks run only on Linux", drivers.ErrExecNotSupported)
}
