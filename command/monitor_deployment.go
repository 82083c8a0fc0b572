package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Timing of the deployment monitor. Package variables so tests can shorten
// them.
var (
	// deploymentMinPoll is the least time between two deployment polls
	// that brought no new index: a server that ignores blocking queries
	// cannot make the monitor spin.
	deploymentMinPoll = time.Second
	// deploymentRetryBackoff is the first pause after a failed poll; it
	// doubles up to deploymentMaxBackoff.
	deploymentRetryBackoff = time.Second
	deploymentMaxBackoff   = 12 * time.Second
	deploymentMaxRetries   = 5
	// rollbackWait bounds the wait for the deployment of an auto-revert.
	rollbackWait = 10 * time.Second
	// maxRollbackFollows bounds how many auto-revert deployments are followed.
	maxRollbackFollows = 3
)

// deploymentTerminal reports whether a deployment status is final.
func deploymentTerminal(status string) bool {
	switch status {
	case api.DeploymentStatusSuccessful, api.DeploymentStatusFailed,
		api.DeploymentStatusCancelled, api.DeploymentStatusBlocked:
		return true
	}
	return false
}

// monitorDeployment follows deployment id until it is final, then follows
// the deployments of any auto-revert. It returns the final status of the
// first deployment.
func (mon *monitor) monitorDeployment(id string, index uint64, wait time.Duration) (string, error) {
	mon.header("Monitoring deployment %q", shortID(id, mon.verbose))
	d, err := mon.watchDeployment(id, index, wait)
	if err != nil {
		fmt.Fprintf(mon.errOut, "Error monitoring deployment %q: %s\n", id, err)
		return "", err
	}
	status := d.Status
	for i := 0; i < maxRollbackFollows && d.Status == api.DeploymentStatusFailed; i++ {
		next := mon.findRollback(d)
		if next == nil {
			break
		}
		mon.header("Deployment %q was auto-reverted; monitoring deployment %q of job version %d",
			shortID(d.ID, mon.verbose), shortID(next.ID, mon.verbose), next.JobVersion)
		if d, err = mon.watchDeployment(next.ID, 0, wait); err != nil {
			fmt.Fprintf(mon.errOut, "Error monitoring deployment %q: %s\n", next.ID, err)
			break
		}
	}
	return status, nil
}

// watchDeployment redraws deployment id on every change until it is final.
// Each poll is a blocking query on the index of the previous answer.
func (mon *monitor) watchDeployment(id string, index uint64, wait time.Duration) (*api.Deployment, error) {
	r := &deploymentRenderer{out: mon.out, tty: mon.tty}
	var last string
	for {
		start := time.Now()
		d, qm, err := mon.fetchDeployment(id, index, wait)
		if err != nil {
			return nil, err
		}
		block := formatDeployment(d, mon.verbose)
		if mon.verbose {
			block += mon.deploymentAllocsSection(id)
		}
		if block != last {
			r.draw(block)
			last = block
		}
		if deploymentTerminal(d.Status) {
			mon.header("Deployment %q %s", shortID(d.ID, mon.verbose), d.Status)
			return d, nil
		}
		pace(index, qm.LastIndex, time.Since(start))
		index = qm.LastIndex
	}
}

// pace sleeps when a blocking query came back quickly without a newer
// index, so a misbehaving server cannot turn the monitor into a hot loop.
func pace(prevIndex, newIndex uint64, elapsed time.Duration) {
	if newIndex <= prevIndex && elapsed < deploymentMinPoll {
		time.Sleep(deploymentMinPoll - elapsed)
	}
}

// fetchDeployment is a blocking read of the deployment, retried with
// backoff on transient errors.
func (mon *monitor) fetchDeployment(id string, index uint64, wait time.Duration) (*api.Deployment, *api.QueryMeta, error) {
	backoff := deploymentRetryBackoff
	for attempt := 0; ; attempt++ {
		q := &api.QueryOptions{WaitIndex: index, WaitTime: wait, AllowStale: true}
		d, qm, err := mon.client.Deployments().Info(id, q)
		if err == nil {
			return d, qm, nil
		}
		if attempt >= deploymentMaxRetries || isNotFound(err) {
			return nil, nil, err
		}
		fmt.Fprintf(mon.errOut, "    Error fetching deployment, retrying in %s: %s\n", backoff, err)
		time.Sleep(backoff)
		backoff = min(2*backoff, deploymentMaxBackoff)
	}
}

// deploymentAllocsSection lists the deployment's allocations (-verbose).
func (mon *monitor) deploymentAllocsSection(id string) string {
	allocs, _, err := mon.client.Deployments().Allocations(id, nil)
	if err != nil {
		return fmt.Sprintf("\n\nError fetching allocations: %s", err)
	}
	return "\n\nAllocations\n" + formatAllocStubs(allocs, true)
}

// findRollback returns the deployment created by the auto-revert of
// failed, or nil. When the failure announced a rollback it waits for it
// (bounded by rollbackWait); when a group merely has auto_revert set it
// checks once.
func (mon *monitor) findRollback(failed *api.Deployment) *api.Deployment {
	switch {
	case expectsRollback(failed):
		return mon.awaitRollback(failed, rollbackWait)
	case anyAutoRevert(failed):
		return mon.awaitRollback(failed, 0)
	}
	return nil
}

// awaitRollback polls the job's latest deployment with blocking queries
// until a newer version's deployment appears or budget runs out.
func (mon *monitor) awaitRollback(failed *api.Deployment, budget time.Duration) *api.Deployment {
	ctx, cancel := context.WithTimeout(context.Background(), budget+time.Second)
	defer cancel()
	deadline := time.Now().Add(budget)
	var index uint64
	var wait time.Duration
	for {
		start := time.Now()
		q := (&api.QueryOptions{Namespace: failed.Namespace, WaitIndex: index, WaitTime: wait}).WithContext(ctx)
		latest, qm, err := mon.client.Jobs().LatestDeployment(failed.JobID, q)
		if err != nil {
			return nil
		}
		if latest != nil && latest.ID != failed.ID && latest.JobVersion > failed.JobVersion {
			return latest
		}
		if wait = time.Until(deadline); wait < 10*time.Millisecond {
			return nil
		}
		pace(index, qm.LastIndex, time.Since(start))
		index = qm.LastIndex
	}
}

// expectsRollback reports whether a failed deployment announced an
// auto-revert (" - rolling back to job version N", Nomad's wording).
func expectsRollback(d *api.Deployment) bool {
	return strings.Contains(d.StatusDescription, "rolling back to job version")
}

func anyAutoRevert(d *api.Deployment) bool {
	for _, s := range d.TaskGroups {
		if s != nil && s.AutoRevert {
			return true
		}
	}
	return false
}

func isNotFound(err error) bool {
	var ure api.UnexpectedResponseError
	return errors.As(err, &ure) && ure.HasStatusCode() && ure.StatusCode() == 404
}

// deploymentRenderer draws the deployment block: in a terminal it redraws
// in place, elsewhere it appends a new block.
type deploymentRenderer struct {
	out   io.Writer
	tty   bool
	lines int
}

func (r *deploymentRenderer) draw(block string) {
	text := indent(formatTime(now())+"\n"+block, "    ")
	if r.tty && r.lines > 0 {
		fmt.Fprintf(r.out, "\x1b[%dA\x1b[J", r.lines)
	}
	fmt.Fprintf(r.out, "%s\n\n", text)
	r.lines = strings.Count(text, "\n") + 2
}

// formatDeployment renders a deployment header and its Deployed table.
func formatDeployment(d *api.Deployment, verbose bool) string {
	header := formatKV([]string{
		"ID|" + shortID(d.ID, verbose),
		"Job ID|" + d.JobID,
		fmt.Sprintf("Job Version|%d", d.JobVersion),
		"Status|" + d.Status,
		"Description|" + d.StatusDescription,
	})
	if len(d.TaskGroups) == 0 {
		return header
	}
	return header + "\n\nDeployed\n" + formatDeploymentGroups(d)
}

// formatDeploymentGroups renders one row per task group. The Auto Revert,
// Promoted/Canaries and Progress Deadline columns appear only when some
// group uses them.
func formatDeploymentGroups(d *api.Deployment) string {
	var autoRevert, canaries, deadline bool
	for _, s := range d.TaskGroups {
		if s == nil {
			continue
		}
		autoRevert = autoRevert || s.AutoRevert
		canaries = canaries || s.DesiredCanaries > 0
		deadline = deadline || s.ProgressDeadline != 0
	}
	cols := []string{"Task Group"}
	cols = appendIf(cols, autoRevert, "Auto Revert")
	cols = appendIf(cols, canaries, "Promoted")
	cols = append(cols, "Desired")
	cols = appendIf(cols, canaries, "Canaries")
	cols = append(cols, "Placed", "Healthy", "Unhealthy")
	cols = appendIf(cols, deadline, "Progress Deadline")
	rows := []string{strings.Join(cols, "|")}

	names := sortedKeys(d.TaskGroups)
	sort.Strings(names)
	for _, name := range names {
		s := d.TaskGroups[name]
		if s == nil {
			s = &api.DeploymentState{}
		}
		row := []string{name}
		row = appendIf(row, autoRevert, fmt.Sprint(s.AutoRevert))
		row = appendIf(row, canaries, fmt.Sprint(s.Promoted))
		row = append(row, fmt.Sprint(s.DesiredTotal))
		row = appendIf(row, canaries, fmt.Sprint(s.DesiredCanaries))
		row = append(row, fmt.Sprint(s.PlacedAllocs), fmt.Sprint(s.HealthyAllocs), fmt.Sprint(s.UnhealthyAllocs))
		row = appendIf(row, deadline, formatTime(s.RequireProgressBy))
		rows = append(rows, strings.Join(row, "|"))
	}
	return formatList(rows)
}

func appendIf(s []string, cond bool, v string) []string {
	if cond {
		return append(s, v)
	}
	return s
}
