package health

import (
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// Record is what a client knows of an allocation's health in one
// deployment. The alloc runner persists it so that a restarted client
// resumes tracking with the original deadline, and re-reports (never
// re-decides) a decision it made before.
type Record struct {
	DeploymentID string
	Start        time.Time // when tracking began; the deadline counts from it
	Healthy      *bool     // nil until decided; then final
	Timestamp    time.Time // when decided
	Reason       string    // why it was decided
}

// Decided reports whether health was decided.
func (r *Record) Decided() bool { return r != nil && r.Healthy != nil }

// Decide returns a copy of r with res (a decision) recorded at now.
func (r *Record) Decide(res Result, now time.Time) *Record {
	c := *r
	healthy := res.Healthy
	c.Healthy, c.Timestamp, c.Reason = &healthy, now, res.Reason
	return &c
}

// Status returns the deployment status the client reports for a decided
// record, carrying the server's canary flag; nil when undecided.
func (r *Record) Status(canary bool) *structs.AllocDeploymentStatus {
	if !r.Decided() {
		return nil
	}
	healthy := *r.Healthy
	return &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: r.Timestamp, Canary: canary}
}
