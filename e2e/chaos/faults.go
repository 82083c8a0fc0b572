package chaos

import (
	"math/rand"
	"time"
)

// Kind is a type of fault.
type Kind string

// The faults. "Leader" faults pick their target when they start (whoever
// leads then); the others pick a server by the schedule's draw.
const (
	// PartitionServer cuts one follower from both other servers.
	PartitionServer Kind = "partition-server"
	// PartitionLeader cuts the leader from its majority (both followers
	// stay connected to each other).
	PartitionLeader Kind = "partition-leader"
	// Asymmetric drops what the leader sends to the followers while what
	// they send still reaches it.
	Asymmetric Kind = "asymmetric-leader"
	// PauseLeader stops the leader with SIGSTOP for the hold, then SIGCONT.
	PauseLeader Kind = "pause-leader"
	// KillRestart kills a server with SIGKILL and restarts it after the
	// hold.
	KillRestart Kind = "kill-restart"
	// Loss drops packets between every pair of servers at random
	// (iptables statistic match; Fault.Loss is the probability).
	Loss Kind = "loss"
	// DiskFull fills the file system of a server's data directory (a
	// small tmpfs) for the hold; a server that exited meanwhile is
	// started again on its data when the space is freed.
	DiskFull Kind = "disk-full"
)

// AllKinds are the faults a schedule draws from, in table order.
var AllKinds = []Kind{PartitionServer, PartitionLeader, Asymmetric, PauseLeader, KillRestart, Loss, DiskFull}

// Fault is one scheduled fault: held for Hold, then healed, then a quiet
// Gap before the next one.
type Fault struct {
	Kind Kind
	// Pick chooses the target among the candidates (followers for
	// PartitionServer, servers for KillRestart): candidate Pick % len.
	Pick int
	Hold time.Duration
	Gap  time.Duration
	Loss float64 // drop probability of a Loss fault
}

// Limits bound a schedule's draws.
type Limits struct {
	HoldMin, HoldMax time.Duration
	GapMin, GapMax   time.Duration
}

// Schedule draws n faults from seed: every kind in turn in a seeded order
// (so a short run still sees each kind), with seeded targets, holds and
// gaps. It is pure: the same seed gives the same schedule.
func Schedule(seed int64, n int, kinds []Kind, l Limits) []Fault {
	rng := rand.New(rand.NewSource(seed))
	var out []Fault
	var round []Kind
	for len(out) < n {
		if len(round) == 0 {
			round = append([]Kind(nil), kinds...)
			rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		k := round[0]
		round = round[1:]
		f := Fault{
			Kind: k,
			Pick: rng.Intn(1 << 16),
			Hold: between(rng, l.HoldMin, l.HoldMax),
			Gap:  between(rng, l.GapMin, l.GapMax),
		}
		if k == Loss {
			f.Loss = 0.2 + 0.4*rng.Float64()
		}
		out = append(out, f)
	}
	return out
}

// between draws a duration in [lo, hi].
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int63n(int64(hi-lo)+1))
}
