package exec

import (
	"context"
	"fmt"

	"github.com/drover-project/drover/drivers"
)

// ExecTask refuses: a command run for alloc exec would have to enter the
// task's namespaces, root, cgroup and capability set, and the supervision
// this driver shares with raw_exec runs commands on the host. Without this
// method the raw_exec one would be promoted from the embedded driver and
// run the command outside the task's isolation.
func (d *Driver) ExecTask(ctx context.Context, taskID string, opts *drivers.ExecOptions) (*drivers.ExitResult, error) {
	return nil, fmt.Errorf("%w: exec tasks are isolated and alloc exec cannot enter their namespaces yet", drivers.ErrExecNotSupported)
}
