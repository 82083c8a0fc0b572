package scheduler

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/drover-project/drover/nomad/structs"
)

// Scheduler algorithms of the scheduler configuration.
const (
	AlgorithmBinpack = "binpack"
	AlgorithmSpread  = "spread"
)

// Placement limits: how many feasible nodes that fit are scored per
// placement. Without affinity or spread blocks, batch groups score 2 and
// service groups max(2, ⌈log2 n⌉) of n candidate nodes; with them, as many
// as the group's count, at most maxScoredWithSpread. Nodes whose score is
// negative (they already run the group, or a failed allocation of it) are
// passed over, at most maxSkip of them, before they are scored anyway.
const (
	minScored           = 2
	maxScoredWithSpread = 100
	maxSkip             = 3
)

// scoreLimit returns how many fitting nodes a placement of tg scores.
func scoreLimit(job *structs.Job, tg *structs.TaskGroup, candidates int) int {
	limit := minScored
	if job.Type == structs.JobTypeService && candidates > 1 {
		limit = max(limit, int(math.Ceil(math.Log2(float64(candidates)))))
	}
	if len(job.Affinities)+len(job.Spreads)+len(tg.Affinities)+len(tg.Spreads) > 0 || hasTaskAffinities(tg) {
		limit = max(limit, min(tg.Count, maxScoredWithSpread))
	}
	return limit
}

func hasTaskAffinities(tg *structs.TaskGroup) bool {
	for _, t := range tg.Tasks {
		if len(t.Affinities) > 0 {
			return true
		}
	}
	return false
}

// shuffledNodes returns nodes in an order drawn from seed (the evaluation
// ID), so that placements spread over the cluster yet equal evaluations
// decide equally.
func shuffledNodes(nodes []*structs.Node, seed string) []*structs.Node {
	out := append([]*structs.Node(nil), nodes...)
	h := fnv.New64a()
	_, _ = h.Write([]byte(seed))
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x5eed))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// fitnessScore scores how full node would be with others (which include
// the new allocation): the mean of its CPU and memory utilization, in
// [0, 1]. Binpack prefers full nodes (the score as is), spread empty ones
// (1 - score).
func fitnessScore(node *structs.Node, others []*structs.Allocation, algorithm string) float64 {
	var cpu, mem int64
	for _, a := range others {
		if a.Terminal() || a.AllocatedResources == nil {
			continue
		}
		for _, tr := range a.AllocatedResources.Tasks {
			cpu += tr.Cpu.CpuShares
			mem += tr.Memory.MemoryMB
		}
	}
	availCPU := node.NodeResources.Cpu.CpuShares - node.ReservedResources.Cpu.CpuShares
	availMem := node.NodeResources.Memory.MemoryMB - node.ReservedResources.Memory.MemoryMB
	u := (ratio(cpu, availCPU) + ratio(mem, availMem)) / 2
	if algorithm == AlgorithmSpread {
		return 1 - u
	}
	return u
}

func ratio(used, avail int64) float64 {
	if avail <= 0 {
		return 1
	}
	return math.Min(1, float64(used)/float64(avail))
}

// antiAffinityScore penalizes a node that already runs collisions
// allocations of the group: -(collisions+1)/count, at least -1; 0 without
// collisions.
func antiAffinityScore(collisions, count int) float64 {
	if collisions == 0 {
		return 0
	}
	return math.Max(-1, -float64(collisions+1)/float64(max(count, 1)))
}

// affinityScore is the weighted share of affinities node meets, in
// [-1, 1] (negative weights repel). ok is false without affinities.
func affinityScore(c *constraintChecker, node *structs.Node, affinities []*structs.Affinity) (score float64, ok bool) {
	var sum, total float64
	for _, a := range affinities {
		if a == nil || a.Weight == 0 {
			continue
		}
		w := float64(a.Weight)
		total += math.Abs(w)
		if c.meets(node, &structs.Constraint{LTarget: a.LTarget, RTarget: a.RTarget, Operand: a.Operand}) {
			sum += w
		}
	}
	if total == 0 {
		return 0, false
	}
	return sum / total, true
}

// spreadScore scores placing one more allocation on a node whose value of
// the spread's attribute is value, given how many allocations of the group
// each value holds (counts) and the group's count, in [-1, 1].
//
// With targets, a value's share is its percent of count (values not listed
// share what the listed ones leave); the score is the part of that share
// still missing, negative once it is exceeded. Without targets, values
// with the fewest allocations score 1 and the others less the more they
// hold.
func spreadScore(s *structs.Spread, value string, known bool, counts map[string]int, count int) float64 {
	cur := counts[value]
	if len(s.SpreadTarget) > 0 {
		pct, listed, sum := 0.0, false, 0.0
		for _, t := range s.SpreadTarget {
			sum += float64(t.Percent)
			if known && t.Value == value {
				pct, listed = float64(t.Percent), true
			}
		}
		if !listed {
			pct = math.Max(0, 100-sum)
		}
		desired := pct / 100 * float64(count)
		if desired <= 0 {
			return -1
		}
		return math.Max(-1, math.Min(1, (desired-float64(cur))/desired))
	}
	if !known {
		return -1
	}
	least, most := cur, cur
	for _, n := range counts {
		least, most = min(least, n), max(most, n)
	}
	switch {
	case cur > least:
		return -float64(cur-least) / float64(cur)
	case most > least:
		return 1
	}
	return 0
}

// distinctPropertyLimit is the RTarget of a distinct_property constraint:
// how many allocations may share a value (1 when unset or malformed).
func distinctPropertyLimit(c *structs.Constraint) int {
	if n, err := strconv.Atoi(c.RTarget); err == nil && n > 0 {
		return n
	}
	return 1
}
