package wan

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Status is this server's view of a member.
type Status string

// Member statuses, with the words `server members` prints.
const (
	StatusAlive  Status = "alive"
	StatusFailed Status = "failed"
	StatusLeft   Status = "left"
)

// Defaults of Config.
const (
	DefaultFailAfter    = 3
	DefaultReapAfter    = 24 * time.Hour
	DefaultTombstoneTTL = 24 * time.Hour
)

// Member is one server as servers gossip it.
type Member struct {
	ID          string // the server's name (its raft ID in its region)
	Region      string
	Datacenter  string
	Addr        string // rpc address, host:port
	Build       string
	Incarnation uint64 // raised only by the member itself
	Left        bool   // force-left: no longer routed to
}

// Name is the member's name as `server members` shows it: "<ID>.<Region>".
func (m Member) Name() string { return m.ID + "." + m.Region }

func (m Member) valid() bool { return m.ID != "" && m.Region != "" && m.Addr != "" }

// View is a member with this server's view of its status.
type View struct {
	Member
	Status Status
	Since  time.Time // when Status last changed
}

// Config tunes a Table; zero values take the defaults.
type Config struct {
	// FailAfter is the number of consecutive failed exchanges that make a
	// member failed.
	FailAfter int
	// ReapAfter is how long a member stays failed before it is removed.
	ReapAfter time.Duration
	// TombstoneTTL is how long a removed or left member's name ignores
	// gossip at or below its last incarnation.
	TombstoneTTL time.Duration
}

func (c Config) withDefaults() Config {
	if c.FailAfter <= 0 {
		c.FailAfter = DefaultFailAfter
	}
	if c.ReapAfter <= 0 {
		c.ReapAfter = DefaultReapAfter
	}
	if c.TombstoneTTL <= 0 {
		c.TombstoneTTL = DefaultTombstoneTTL
	}
	return c
}

type entry struct {
	m      Member
	status Status
	misses int
	since  time.Time
}

type tombstone struct {
	incarnation uint64
	at          time.Time
}

// Table is the membership table of one server.
type Table struct {
	cfg Config

	mu      sync.Mutex
	self    string
	members map[string]*entry
	tombs   map[string]tombstone
}

// New returns the table of the server self (its Incarnation should be its
// start time, so that a restart supersedes older gossip).
func New(self Member, cfg Config, now time.Time) *Table {
	self.Left = false
	t := &Table{cfg: cfg.withDefaults(), self: self.Name(),
		members: map[string]*entry{}, tombs: map[string]tombstone{}}
	t.members[t.self] = &entry{m: self, status: StatusAlive, since: now}
	return t
}

// Self returns this server's own entry.
func (t *Table) Self() Member {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.members[t.self].m
}

// Change is an entry added or whose status changed, for logging.
type Change struct {
	Name   string
	Status Status
}

// Merge folds gossip into the table and reports what changed.
func (t *Table) Merge(in []Member, now time.Time) []Change {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Change
	for _, m := range in {
		if !m.valid() {
			continue
		}
		if c, ok := t.mergeOne(m, now); ok {
			out = append(out, c)
		}
	}
	return out
}

func (t *Table) mergeOne(m Member, now time.Time) (Change, bool) {
	name := m.Name()
	if name == t.self {
		self := t.members[t.self]
		if m.Left && m.Incarnation >= self.m.Incarnation {
			// Declared gone while running: refute with a newer incarnation.
			self.m.Incarnation = m.Incarnation + 1
		}
		return Change{}, false
	}
	if tomb, ok := t.tombs[name]; ok {
		if m.Incarnation <= tomb.incarnation {
			return Change{}, false
		}
		delete(t.tombs, name)
	}
	e, ok := t.members[name]
	switch {
	case !ok:
		e = &entry{m: m, status: StatusAlive, since: now}
		if m.Left {
			e.status = StatusLeft
		}
		t.members[name] = e
		return Change{Name: name, Status: e.status}, true
	case m.Incarnation > e.m.Incarnation:
		before := e.status
		e.m, e.misses = m, 0
		e.status = StatusAlive
		if m.Left {
			e.status = StatusLeft
		}
		if e.status != before {
			e.since = now
			return Change{Name: name, Status: e.status}, true
		}
	case m.Incarnation == e.m.Incarnation && m.Left && !e.m.Left:
		e.m.Left, e.status, e.since = true, StatusLeft, now
		return Change{Name: name, Status: StatusLeft}, true
	}
	return Change{}, false
}

// Contacted records the outcome of an exchange with the member name (a
// failed one counts towards FailAfter) and reports a status change.
func (t *Table) Contacted(name string, ok bool, now time.Time) (Change, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, found := t.members[name]
	if !found || name == t.self || e.status == StatusLeft {
		return Change{}, false
	}
	if ok {
		e.misses = 0
		if e.status != StatusAlive {
			e.status, e.since = StatusAlive, now
			return Change{Name: name, Status: StatusAlive}, true
		}
		return Change{}, false
	}
	e.misses++
	if e.misses >= t.cfg.FailAfter && e.status == StatusAlive {
		e.status, e.since = StatusFailed, now
		return Change{Name: name, Status: StatusFailed}, true
	}
	return Change{}, false
}

// Leave marks the member name as left (force-leave); the leave spreads with
// the gossip. It reports whether the name is a member other than this
// server.
func (t *Table) Leave(name string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.members[name]
	if !ok || name == t.self {
		return false
	}
	if !e.m.Left {
		e.m.Left, e.status, e.since = true, StatusLeft, now
	}
	return true
}

// Reap removes members failed for ReapAfter and members left for
// TombstoneTTL, leaving tombstones, and forgets expired tombstones. It
// returns the removed names.
func (t *Table) Reap(now time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for name, e := range t.members {
		if name == t.self {
			continue
		}
		failedLong := e.status == StatusFailed && now.Sub(e.since) >= t.cfg.ReapAfter
		leftLong := e.status == StatusLeft && now.Sub(e.since) >= t.cfg.TombstoneTTL
		if failedLong || leftLong {
			delete(t.members, name)
			t.tombs[name] = tombstone{incarnation: e.m.Incarnation, at: now}
			out = append(out, name)
		}
	}
	for name, tomb := range t.tombs {
		if now.Sub(tomb.at) >= t.cfg.TombstoneTTL {
			delete(t.tombs, name)
		}
	}
	slices.Sort(out)
	return out
}

// Gossip is what this server tells others: every entry, itself included,
// left ones too (so that a leave spreads).
func (t *Table) Gossip() []Member {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Member, 0, len(t.members))
	for _, e := range t.members {
		out = append(out, e.m)
	}
	slices.SortFunc(out, byRegionID)
	return out
}

// Members lists every entry with this server's view of it, sorted by
// region, then ID.
func (t *Table) Members() []View {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]View, 0, len(t.members))
	for _, e := range t.members {
		out = append(out, View{Member: e.m, Status: e.status, Since: e.since})
	}
	slices.SortFunc(out, func(a, b View) int { return byRegionID(a.Member, b.Member) })
	return out
}

// Lookup returns the entry named name.
func (t *Table) Lookup(name string) (View, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.members[name]
	if !ok {
		return View{}, false
	}
	return View{Member: e.m, Status: e.status, Since: e.since}, true
}

// Targets are the members this server exchanges with: everyone but itself
// and those that left. Failed members stay targets, so that a recovery is
// noticed.
func (t *Table) Targets() []Member {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Member
	for name, e := range t.members {
		if name != t.self && e.status != StatusLeft {
			out = append(out, e.m)
		}
	}
	slices.SortFunc(out, byRegionID)
	return out
}

// HasAddr reports whether a member other than a left one has the rpc
// address addr.
func (t *Table) HasAddr(addr string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.members {
		if e.m.Addr == addr && e.status != StatusLeft {
			return true
		}
	}
	return false
}

// Route returns the alive members of region other than this server, sorted
// by ID: the servers a request for region may be sent to. Empty means no
// path to the region.
func (t *Table) Route(region string) []Member {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Member
	for name, e := range t.members {
		if name != t.self && e.m.Region == region && e.status == StatusAlive {
			out = append(out, e.m)
		}
	}
	slices.SortFunc(out, byRegionID)
	return out
}

// Regions lists, sorted, this server's region and every region with an
// alive member.
func (t *Table) Regions() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	seen := map[string]bool{t.members[t.self].m.Region: true}
	for _, e := range t.members {
		if e.status == StatusAlive {
			seen[e.m.Region] = true
		}
	}
	out := make([]string, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

func byRegionID(a, b Member) int {
	return cmp.Or(cmp.Compare(a.Region, b.Region), cmp.Compare(a.ID, b.ID))
}
