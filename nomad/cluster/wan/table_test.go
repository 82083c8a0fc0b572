package wan

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func member(id, region, addr string, inc uint64) Member {
	return Member{ID: id, Region: region, Datacenter: "dc1", Addr: addr, Build: "1.0.0", Incarnation: inc}
}

func newTable() *Table {
	return New(member("a1", "east", "10.0.0.1:4647", 100), Config{FailAfter: 2, ReapAfter: time.Hour, TombstoneTTL: 2 * time.Hour}, t0)
}

func statusOf(t *testing.T, tb *Table, name string) Status {
	t.Helper()
	v, ok := tb.Lookup(name)
	require.True(t, ok, "%s not in table", name)
	return v.Status
}

func TestMerge_AddsUnknownAsAliveAndSkipsInvalid(t *testing.T) {
	tb := newTable()
	changes := tb.Merge([]Member{
		member("b1", "west", "10.0.1.1:4647", 7),
		{ID: "", Region: "west", Addr: "x:1"},      // no ID
		{ID: "b9", Region: "", Addr: "x:1"},        // no region
		{ID: "b8", Region: "west", Addr: ""},       // no address
		member("a1", "east", "10.0.0.1:4647", 100), // itself
		member("b1", "west", "10.0.1.1:4647", 7),   // duplicate
	}, t0)
	require.Equal(t, []Change{{Name: "b1.west", Status: StatusAlive}}, changes)
	require.Equal(t, []string{"east", "west"}, tb.Regions())
	require.Len(t, tb.Members(), 2)
	require.Equal(t, []Member{member("b1", "west", "10.0.1.1:4647", 7)}, tb.Route("west"))
	require.Empty(t, tb.Route("east"), "a route never leads to this server itself")
	require.Empty(t, tb.Route("north"))
}

func TestContacted_FailsAfterMissesAndRecovers(t *testing.T) {
	tb := newTable()
	tb.Merge([]Member{member("b1", "west", "10.0.1.1:4647", 7), member("b2", "west", "10.0.1.2:4647", 7)}, t0)

	_, changed := tb.Contacted("b1.west", false, t0.Add(time.Second))
	require.False(t, changed, "one miss is below FailAfter")
	require.Equal(t, StatusAlive, statusOf(t, tb, "b1.west"))
	c, changed := tb.Contacted("b1.west", false, t0.Add(2*time.Second))
	require.True(t, changed)
	require.Equal(t, Change{Name: "b1.west", Status: StatusFailed}, c)
	require.Equal(t, []string{"b2"}, ids(tb.Route("west")))
	require.Equal(t, []string{"east", "west"}, tb.Regions(), "b2 still carries the region")

	// A success resets the count: two new misses are needed again.
	c, changed = tb.Contacted("b1.west", true, t0.Add(3*time.Second))
	require.True(t, changed)
	require.Equal(t, StatusAlive, c.Status)
	tb.Contacted("b1.west", false, t0.Add(4*time.Second))
	require.Equal(t, StatusAlive, statusOf(t, tb, "b1.west"))

	// Unknown names and the server itself are not tracked.
	_, changed = tb.Contacted("zz.west", false, t0)
	require.False(t, changed)
	for range 5 {
		tb.Contacted("a1.east", false, t0)
	}
	require.Equal(t, StatusAlive, statusOf(t, tb, "a1.east"))
}

func TestRegions_DownRegionDisappears(t *testing.T) {
	tb := newTable()
	tb.Merge([]Member{member("b1", "west", "10.0.1.1:4647", 7), member("c1", "north", "10.0.2.1:4647", 7)}, t0)
	require.Equal(t, []string{"east", "north", "west"}, tb.Regions())
	for i := range 2 {
		tb.Contacted("c1.north", false, t0.Add(time.Duration(i)*time.Second))
	}
	require.Equal(t, []string{"east", "west"}, tb.Regions())
	require.Empty(t, tb.Route("north"))
	// Still listed as a failed member until reaped.
	require.Equal(t, StatusFailed, statusOf(t, tb, "c1.north"))
	// Gossip at the same incarnation does not revive it: liveness is this
	// server's own observation.
	tb.Merge([]Member{member("c1", "north", "10.0.2.1:4647", 7)}, t0.Add(3*time.Second))
	require.Equal(t, StatusFailed, statusOf(t, tb, "c1.north"))
}

func TestMerge_HigherIncarnationReplaces(t *testing.T) {
	tb := newTable()
	tb.Merge([]Member{member("b1", "west", "10.0.1.1:4647", 7)}, t0)
	tb.Contacted("b1.west", false, t0)
	tb.Contacted("b1.west", false, t0)
	require.Equal(t, StatusFailed, statusOf(t, tb, "b1.west"))

	// Older gossip changes nothing.
	tb.Merge([]Member{member("b1", "west", "10.9.9.9:1", 6)}, t0)
	v, _ := tb.Lookup("b1.west")
	require.Equal(t, "10.0.1.1:4647", v.Addr)

	// A restart (newer incarnation, new address) is alive at once.
	changes := tb.Merge([]Member{member("b1", "west", "10.0.1.9:4647", 8)}, t0.Add(time.Minute))
	require.Equal(t, []Change{{Name: "b1.west", Status: StatusAlive}}, changes)
	v, _ = tb.Lookup("b1.west")
	require.Equal(t, "10.0.1.9:4647", v.Addr)
	require.Equal(t, t0.Add(time.Minute), v.Since)
	require.Equal(t, []string{"b1"}, ids(tb.Route("west")))
}

func TestLeave_SpreadsAndIsRefutedByALiveServer(t *testing.T) {
	a := newTable()
	b := New(member("b1", "west", "10.0.1.1:4647", 7), Config{}, t0)
	c := New(member("c1", "north", "10.0.2.1:4647", 9), Config{}, t0)
	a.Merge(b.Gossip(), t0)
	a.Merge(c.Gossip(), t0)

	require.False(t, a.Leave("a1.east", t0), "a server does not force itself out")
	require.False(t, a.Leave("nope.west", t0))
	require.True(t, a.Leave("b1.west", t0))
	require.Equal(t, StatusLeft, statusOf(t, a, "b1.west"))
	require.Empty(t, a.Route("west"))
	require.Equal(t, []string{"east", "north"}, a.Regions())
	require.NotContains(t, names(a.Targets()), "b1.west", "left members are not contacted")

	// c hears it from a: the leave spreads.
	changes := c.Merge(a.Gossip(), t0)
	require.Contains(t, changes, Change{Name: "b1.west", Status: StatusLeft})
	require.Equal(t, StatusLeft, statusOf(t, c, "b1.west"))

	// b is alive and hears it: it refutes with a newer incarnation, which
	// brings it back everywhere.
	b.Merge(a.Gossip(), t0)
	require.Equal(t, uint64(8), b.Self().Incarnation)
	changes = a.Merge(b.Gossip(), t0.Add(time.Second))
	require.Equal(t, []Change{{Name: "b1.west", Status: StatusAlive}}, changes)
	require.Equal(t, []string{"east", "north", "west"}, a.Regions())
}

func TestReap_TombstoneKeepsOldGossipOut(t *testing.T) {
	tb := newTable() // ReapAfter 1h, TombstoneTTL 2h
	tb.Merge([]Member{member("b1", "west", "10.0.1.1:4647", 7), member("b2", "west", "10.0.1.2:4647", 7)}, t0)
	tb.Contacted("b1.west", false, t0)
	tb.Contacted("b1.west", false, t0)
	tb.Leave("b2.west", t0)

	require.Empty(t, tb.Reap(t0.Add(59*time.Minute)))
	require.Equal(t, []string{"b1.west"}, tb.Reap(t0.Add(time.Hour)))
	_, ok := tb.Lookup("b1.west")
	require.False(t, ok)

	// A peer that still remembers b1 at the same incarnation cannot bring
	// it back while the tombstone lasts.
	require.Empty(t, tb.Merge([]Member{member("b1", "west", "10.0.1.1:4647", 7)}, t0.Add(90*time.Minute)))
	// The left member goes after TombstoneTTL.
	require.Equal(t, []string{"b2.west"}, tb.Reap(t0.Add(2*time.Hour)))
	// b1's tombstone expired too (set at 1h, TTL 2h: gone at 3h).
	tb.Reap(t0.Add(3 * time.Hour))
	require.NotEmpty(t, tb.Merge([]Member{member("b1", "west", "10.0.1.1:4647", 7)}, t0.Add(3*time.Hour)))

	// A restarted server passes a tombstone at once.
	tb2 := newTable()
	tb2.Merge([]Member{member("b1", "west", "10.0.1.1:4647", 7)}, t0)
	tb2.Contacted("b1.west", false, t0)
	tb2.Contacted("b1.west", false, t0)
	tb2.Reap(t0.Add(time.Hour))
	require.Equal(t, []Change{{Name: "b1.west", Status: StatusAlive}},
		tb2.Merge([]Member{member("b1", "west", "10.0.1.1:4647", 8)}, t0.Add(time.Hour)))
}

// Three servers that gossip pairwise converge on one table, whatever the
// order.
func TestGossip_Converges(t *testing.T) {
	ts := []*Table{
		New(member("a1", "east", "h:1", 1), Config{}, t0),
		New(member("a2", "east", "h:2", 1), Config{}, t0),
		New(member("b1", "west", "h:3", 1), Config{}, t0),
		New(member("c1", "north", "h:4", 1), Config{}, t0),
	}
	exchange := func(x, y *Table) {
		x.Merge(y.Gossip(), t0)
		y.Merge(x.Gossip(), t0)
	}
	// A chain: a1-a2, a1-b1, b1-c1; then one more round.
	exchange(ts[0], ts[1])
	exchange(ts[0], ts[2])
	exchange(ts[2], ts[3])
	for _, x := range ts {
		exchange(x, ts[2])
	}
	for _, x := range ts {
		require.Equal(t, []string{"east", "north", "west"}, x.Regions())
		require.Len(t, x.Members(), 4)
	}
	require.True(t, ts[3].HasAddr("h:2"))
	require.Equal(t, []string{"a1", "a2"}, ids(ts[3].Route("east")))
}

func ids(ms []Member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func names(ms []Member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name())
	}
	return out
}
