package allocrunner

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/client/allocrunner/taskrunner/getter"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

// StateDB persists what a runner needs to recover after a client restart.
// The client provides a bbolt-backed one (client/state); tests use MemDB.
// PutTaskHandle with a nil handle clears the stored handle; GetTaskHandle
// may then return nil or a handle with an empty TaskID (both mean none).
type StateDB interface {
	PutTaskHandle(allocID, task string, h *drivers.TaskHandle) error
	GetTaskHandle(allocID, task string) (*drivers.TaskHandle, error) // nil, nil if none
	PutTaskState(allocID, task string, st *structs.TaskState) error
	GetTaskState(allocID, task string) (*structs.TaskState, error) // nil, nil if none
	DeleteAlloc(allocID string) error
}

// Config configures an AllocRunner. NewAllocRunner copies it.
type Config struct {
	Alloc        *structs.Allocation // with Alloc.Job set
	Node         *structs.Node       // for env (NOMAD_*, node attrs, meta)
	AllocRootDir string              // the runner uses <AllocRootDir>/<allocID>
	Drivers      drivers.Catalog     // a task whose driver is missing fails with a Driver Failure
	StateDB      StateDB             // required
	Logger       hclog.Logger        // default: null logger
	// StateUpdater receives the alloc's client-side state whenever it changes (ClientStatus,
	// ClientDescription, TaskStates, and DeploymentStatus: the client's health decision, or nil
	// to leave the server's). Must not block for long; the client batches to the server.
	// Calls are serialized; each carries the state at the time of the call. It is called from the
	// runner's goroutines: it must not call Destroy or Shutdown synchronously (Alloc is fine).
	StateUpdater func(update *structs.Allocation)
	// ServicesUpdater, or nil, receives the allocation with its client
	// state and the server's deployment status (Alloc) whenever the state
	// changes, for the native service catalog.
	ServicesUpdater func(alloc *structs.Allocation)
	// PrevAlloc, when the alloc replaces one on the same node (Alloc.PreviousAllocation names a local
	// alloc), lets the runner stop/wait for it; nil otherwise.
	PrevAlloc PrevAllocController
	// PrevData, when the alloc replaces one that ran on another node and
	// its group's ephemeral_disk has migrate, fetches that allocation's
	// ephemeral data before the tasks start; nil otherwise.
	PrevData PrevDataFetcher
	Now      func() time.Time // default time.Now
	// HostEnv is the client's environment less env.denylist, handed to the
	// tasks of drivers that inherit it (raw_exec, exec).
	HostEnv map[string]string
	// TaskAPI, when set, opens a task's task API socket in its secrets
	// dir (which must stay inside its task dir); nil: tasks get none.
	TaskAPI func(taskDir, secretsDir string) (io.Closer, error)
	// RenewIdentities has the servers sign again a task's workload
	// identities with a ttl before they expire; nil: they are not renewed.
	RenewIdentities taskrunner.RenewFunc

	// Templates renders the tasks' template blocks; nil: a task with
	// templates fails before it starts.
	Templates *taskrunner.TemplateConfig

	// Artifact is the client's artifact {} settings for the tasks'
	// artifact downloads; nil means the defaults.
	Artifact *getter.Config

	// Network builds the namespace of an allocation in bridge mode; nil
	// on a client that cannot (such an allocation then fails).
	Network NetworkManager
}

// PrevAllocController is how a replacement talks to the allocation it replaces on the same node.
type PrevAllocController interface {
	// Stop asks the previous alloc to stop its tasks now (used once the replacement is prepared).
	Stop()
	// Wait blocks until the previous alloc's tasks have all exited (or ctx done).
	Wait(ctx context.Context) error
}

// PrevDataFetcher fetches a previous allocation's ephemeral data from the
// node that ran it (ephemeral_disk migrate).
type PrevDataFetcher interface {
	// Fetch waits until the previous allocation has stopped on its node
	// and returns its ephemeral data, a stream in allocdir.WriteSnapshot's
	// format, which the caller closes. It returns an error when the data
	// cannot be had (the allocation was collected, the node is gone) or
	// ctx ends.
	Fetch(ctx context.Context) (io.ReadCloser, error)
}

// validate checks the required fields of cfg.
func (cfg *Config) validate() error {
	var errs []error
	if cfg.Alloc == nil {
		errs = append(errs, errors.New("Alloc is required"))
	} else {
		if cfg.Alloc.ID == "" {
			errs = append(errs, errors.New("Alloc.ID is required"))
		}
		if cfg.Alloc.Job == nil {
			errs = append(errs, errors.New("Alloc.Job is required"))
		} else if cfg.Alloc.Job.LookupTaskGroup(cfg.Alloc.TaskGroup) == nil {
			errs = append(errs, errors.New("Alloc.TaskGroup "+cfg.Alloc.TaskGroup+" is not a group of Alloc.Job"))
		}
	}
	if cfg.AllocRootDir == "" {
		errs = append(errs, errors.New("AllocRootDir is required"))
	}
	if cfg.StateDB == nil {
		errs = append(errs, errors.New("StateDB is required"))
	}
	return errors.Join(errs...)
}
