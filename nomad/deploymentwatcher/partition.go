package deploymentwatcher

import (
	"fmt"
	"sort"
	"strings"

	"github.com/drover-project/drover/nomad/structs"
)

// successDescription is the description of a successful deployment of
// job: Nomad's words, and, when a group of job has drover.partition, which
// groups keep how many nodes on older versions. The deployment succeeds
// for the nodes it may update (the scheduler leaves the held ones out of
// DesiredTotal); the partition is said so that `deployment status` does
// not pass a partial rollout off as a whole one.
func successDescription(job *structs.Job) string {
	if job == nil {
		return structs.DeploymentStatusDescriptionSuccessful
	}
	var held []string
	for _, tg := range job.TaskGroups {
		if n := tg.DroverPartition(); n > 0 {
			held = append(held, fmt.Sprintf("%s: %d", tg.Name, n))
		}
	}
	if len(held) == 0 {
		return structs.DeploymentStatusDescriptionSuccessful
	}
	sort.Strings(held)
	return fmt.Sprintf("%s; %s keeps nodes on older versions (%s)",
		structs.DeploymentStatusDescriptionSuccessful, structs.DroverMetaPartition, strings.Join(held, ", "))
}
