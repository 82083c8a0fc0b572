package nomad

import (
	"context"
	"time"

	"github.com/drover-project/drover/nomad/deploymentwatcher"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// watcherBackend is the server side of deploymentwatcher.Backend: every
// write is a raft apply, so the watcher's decisions reach every server.
type watcherBackend struct{ s *Server }

var _ deploymentwatcher.Backend = watcherBackend{}

func (b watcherBackend) UpdateDeploymentStatus(req *structs.DeploymentStatusUpdateRequest) (uint64, error) {
	_, index, err := b.s.raftApply(structs.DeploymentStatusUpdateRequestType, req)
	return index, err
}

func (b watcherBackend) PromoteDeployment(req *structs.DeploymentPromoteRequest) (uint64, error) {
	_, index, err := b.s.raftApply(structs.DeploymentPromoteRequestType, req)
	return index, err
}

func (b watcherBackend) CreateEvals(evals []*structs.Evaluation) (uint64, error) {
	_, index, err := b.s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: evals})
	return index, err
}

func (b watcherBackend) MarkJobStable(namespace, jobID string, version uint64) (uint64, error) {
	_, index, err := b.s.raftApply(structs.JobStabilityRequestType,
		&structs.JobStabilityRequest{Namespace: namespace, JobID: jobID, Version: version, Stable: true})
	return index, err
}

func (b watcherBackend) State() *state.StateStore { return b.s.State() }

func (b watcherBackend) Now() time.Time { return b.s.now() }

// runDeploymentWatcher runs the deployment watcher until ctx ends (when
// this server loses leadership) and returns once it has stopped. A new
// watcher per term rebuilds every active deployment's machine from state.
func (s *Server) runDeploymentWatcher(ctx context.Context) {
	w := deploymentwatcher.New(watcherBackend{s}, s.logger, deploymentwatcher.RealClock(s.now))
	w.SetEnabled(true)
	<-ctx.Done()
	w.SetEnabled(false)
}
