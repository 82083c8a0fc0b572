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

// GateConfig is what the deployment watcher's gates need from the agent
// configuration.
type GateConfig struct {
	// PrometheusAddress is the base URL of Prometheus's HTTP API; ""
	// refuses jobs with drover.analysis_query at registration.
	PrometheusAddress string
	// WebhookSecret signs webhook gate calls; "" refuses jobs with
	// drover.gate_webhook at registration.
	WebhookSecret string
}

// runDeploymentWatcher runs the deployment watcher until ctx ends (when
// this server loses leadership) and returns once it has stopped. A new
// watcher per term rebuilds every active deployment's machine from state.
func (s *Server) runDeploymentWatcher(ctx context.Context) {
	w := deploymentwatcher.New(watcherBackend{s}, s.logger, deploymentwatcher.RealClock(s.now))
	w.SetGateRunner(deploymentwatcher.HTTPGates{
		PrometheusAddress: s.config.Gates.PrometheusAddress, WebhookSecret: s.config.Gates.WebhookSecret,
	})
	w.SetEnabled(true)
	<-ctx.Done()
	w.SetEnabled(false)
}
