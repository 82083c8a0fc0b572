package structs

import (
	"fmt"
	"sort"
)

// Surge rollout of a system job, asked for in group meta:
//
//	drover.surge = "true"
//
// makes each node of a wave start the new allocation beside the old one
// and stop the old one only once the new one is healthy (the scheduler's
// rules are in scheduler/system_surge.go). Two allocations of the group
// then run on the node at once, so anything that one allocation per node
// would own alone is refused at registration:
//
//   - a static port (network { port "x" { static = N } }, in the group or
//     a task's resources; bridge mode included: the host port is bound);
//   - a host or CSI volume (the node's directory or the volume's single
//     writer would be shared by two allocations of different versions);
//   - an ephemeral_disk with sticky or migrate (its data moves from the old
//     allocation when that stops, which under surge is after the new one
//     started).
//
// Surge needs health to know when the old allocation may stop, so the
// group must use a deployment (update { max_parallel } above 0), and it is
// refused on jobs other than system jobs. "false" is the default rollout.
const DroverMetaSurge = DroverMetaPrefix + "surge"

func init() {
	RegisterDroverMetaKey(DroverMetaSurge, checkDroverSurge)
}

// DroverSurge reports whether tg rolls out by surge (drover.surge = "true").
func (tg *TaskGroup) DroverSurge() bool {
	return tg != nil && tg.Meta[DroverMetaSurge] == "true"
}

func checkDroverSurge(v string, tg *TaskGroup, jobType string) []string {
	if v != "true" && v != "false" {
		return []string{fmt.Sprintf("must be \"true\" or \"false\", got %q", v)}
	}
	if jobType != JobTypeSystem {
		return []string{fmt.Sprintf("only system jobs roll out by surge, not %s jobs", jobType)}
	}
	if v == "false" {
		return nil
	}
	var out []string
	if tg.Update == nil || tg.Update.MaxParallel <= 0 {
		out = append(out, "needs a deployment (the old allocation stops when the new one is healthy), but update { max_parallel } is 0 (all at once)")
	}
	for _, c := range surgeCollisions(tg) {
		out = append(out, "the old and the new allocation run on the node at once, so they would collide on "+c)
	}
	return out
}

// surgeCollisions lists what two allocations of tg on one node would both
// claim, in words naming the port, volume or disk.
func surgeCollisions(tg *TaskGroup) []string {
	var out []string
	ports := func(where string, nws []*NetworkResource) {
		for _, nw := range nws {
			if nw == nil {
				continue
			}
			for _, p := range nw.ReservedPorts {
				out = append(out, fmt.Sprintf("static port %q (%d) of %s", p.Label, p.Value, where))
			}
		}
	}
	ports(fmt.Sprintf("group %q", tg.Name), tg.Networks)
	for _, t := range tg.Tasks {
		if t != nil && t.Resources != nil {
			ports(fmt.Sprintf("task %q", t.Name), t.Resources.Networks)
		}
	}
	names := make([]string, 0, len(tg.Volumes))
	for name := range tg.Volumes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := tg.Volumes[name]
		if v == nil {
			continue
		}
		switch v.Type {
		case VolumeTypeHost:
			out = append(out, fmt.Sprintf("host volume %q (source %q)", name, v.Source))
		case VolumeTypeCSI:
			out = append(out, fmt.Sprintf("CSI volume %q (source %q)", name, v.Source))
		}
	}
	if d := tg.EphemeralDisk; d.KeepsData() {
		out = append(out, "ephemeral_disk with sticky or migrate (its data moves from the old allocation only once that stops)")
	}
	return out
}
