package cluster

import (
	"bufio"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/cluster/wan"
)

// regionRequest sends GET /v1/whoami for region through n's
// ForwardToRegion (n's own handler when the region is n's).
func regionRequest(t *testing.T, n *testNode, region string, hdr http.Header) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/v1/whoami", nil)
	for k, v := range hdr {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	if !n.c.ForwardToRegion(rec, req, region) {
		return 0, ""
	}
	body, _ := io.ReadAll(rec.Body)
	return rec.Code, string(body)
}

func memberNames(views []wan.View, status wan.Status) []string {
	var out []string
	for _, v := range views {
		if v.Status == status {
			out = append(out, v.Name())
		}
	}
	slices.Sort(out)
	return out
}

// A join between servers of two regions federates them: no raft change,
// both list both regions, requests for the other region reach it, and an
// unknown region has no path.
func TestJoin_OtherRegionFederates(t *testing.T) {
	a := startNode(t, "a1", nodeOpts{expect: 1, region: "east"})
	b := startNode(t, "b1", nodeOpts{expect: 1, region: "west"})
	waitLeader(t, []*testNode{a})
	waitLeader(t, []*testNode{b})

	id, err := b.c.Join(a.c.AdvertiseAddr())
	require.NoError(t, err)
	require.Equal(t, "a1", id)
	// Both know both at once: the join itself is an exchange.
	require.Equal(t, []string{"east", "west"}, a.c.Regions())
	require.Equal(t, []string{"east", "west"}, b.c.Regions())
	require.Equal(t, []string{"a1"}, voters(a.c), "raft configurations stay apart")
	require.Equal(t, []string{"b1"}, voters(b.c))
	require.True(t, a.c.IsLeader())
	require.True(t, b.c.IsLeader())
	require.Equal(t, []string{"a1.east", "b1.west"}, memberNames(a.c.WANMembers(), wan.StatusAlive))

	code, body := regionRequest(t, a, "west", nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "b1", body)
	code, body = regionRequest(t, b, "east", nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "a1", body)
	code, _ = regionRequest(t, a, "east", nil)
	require.Zero(t, code, "a request for the own region is not forwarded")
	code, _ = regionRequest(t, a, "", nil)
	require.Zero(t, code)

	code, body = regionRequest(t, a, "north", nil)
	require.Equal(t, http.StatusInternalServerError, code)
	require.Equal(t, "No path to region", body)
	// A request forwarded once is never forwarded to another region again.
	code, body = regionRequest(t, a, "west", http.Header{RegionForwardedHeader: {"south"}})
	require.Equal(t, http.StatusInternalServerError, code)
	require.Equal(t, "No path to region", body)

	// Joining again is harmless.
	_, err = a.c.Join(b.c.AdvertiseAddr())
	require.NoError(t, err)
	require.Equal(t, []string{"b1"}, voters(b.c))
}

// The forwarded request carries the region mark and not the leader-forward
// mark, so the receiving region may still forward it to its leader.
func TestForwardToRegion_Marks(t *testing.T) {
	a := startNode(t, "a1", nodeOpts{expect: 1, region: "east"})
	b := startNode(t, "b1", nodeOpts{expect: 1, region: "west"})
	waitLeader(t, []*testNode{a})
	_, err := a.c.Join(b.c.AdvertiseAddr())
	require.NoError(t, err)

	req := httptest.NewRequest(http.MethodGet, "/v1/headers?region=west", nil)
	req.Header.Set(ForwardedHeader, "1")
	req.Header.Set("X-Nomad-Token", "secret")
	rec := httptest.NewRecorder()
	require.True(t, a.c.ForwardToRegion(rec, req, "west"))
	require.Equal(t, http.StatusOK, rec.Code)
	var got http.Header
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	require.Equal(t, "east", got.Get(RegionForwardedHeader))
	require.Empty(t, got.Get(ForwardedHeader))
	require.Equal(t, "secret", got.Get("X-Nomad-Token"))
}

// A region learns every server of the other through one join, and a
// region whose servers all stop disappears from the routes.
func TestFederation_GossipAndFailure(t *testing.T) {
	east := startThree(t) // region "" is the default region
	b := startNode(t, "b1", nodeOpts{expect: 1, region: "west"})
	waitLeader(t, []*testNode{b})
	_, err := b.c.Join(east[0].c.AdvertiseAddr())
	require.NoError(t, err)

	all := []string{"b1.west", "s1.global", "s2.global", "s3.global"}
	for _, n := range append(slices.Clone(east), b) {
		require.Eventually(t, func() bool {
			return slices.Equal(memberNames(n.c.WANMembers(), wan.StatusAlive), all)
		}, testWait, testTick, "%s: %v", n.id, n.c.WANMembers())
		require.Equal(t, []string{"global", "west"}, n.c.Regions())
	}
	require.Len(t, b.c.wan.Route("global"), 3)

	// Requests for "global" from west keep working while one server is down.
	east[2].stop()
	for range 5 {
		code, body := regionRequest(t, b, "global", nil)
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, []string{"s1", "s2"}, body)
	}
	require.Eventually(t, func() bool {
		return slices.Equal(memberNames(b.c.WANMembers(), wan.StatusFailed), []string{"s3.global"})
	}, testWait, testTick)

	east[0].stop()
	east[1].stop()
	require.Eventually(t, func() bool {
		return slices.Equal(b.c.Regions(), []string{"west"})
	}, testWait, testTick)
	code, body := regionRequest(t, b, "global", nil)
	require.Equal(t, http.StatusInternalServerError, code)
	require.Equal(t, "No path to region", body)
	require.Equal(t, []string{"s1.global", "s2.global", "s3.global"}, memberNames(b.c.WANMembers(), wan.StatusFailed))
}

// retry_join naming a server of another region federates without any
// raft change, on a server that bootstraps alone.
func TestRetryJoin_OtherRegionFederates(t *testing.T) {
	a := startNode(t, "a1", nodeOpts{expect: 1, region: "east"})
	waitLeader(t, []*testNode{a})
	b := startNode(t, "b1", nodeOpts{expect: 1, region: "west", join: []string{a.c.AdvertiseAddr()}})
	waitLeader(t, []*testNode{b})
	require.Eventually(t, func() bool {
		return slices.Equal(a.c.Regions(), []string{"east", "west"}) && slices.Equal(b.c.Regions(), []string{"east", "west"})
	}, testWait, testTick)
	require.Equal(t, []string{"b1"}, voters(b.c))
	require.Equal(t, []string{"a1"}, voters(a.c))
}

// A force-left member of another region is no longer routed to, on every
// server that hears of it.
func TestForceLeaveMember(t *testing.T) {
	a := startNode(t, "a1", nodeOpts{expect: 1, region: "east"})
	b := startNode(t, "b1", nodeOpts{expect: 1, region: "west"})
	c := startNode(t, "c1", nodeOpts{expect: 1, region: "north"})
	for _, n := range []*testNode{a, b, c} {
		waitLeader(t, []*testNode{n})
	}
	_, err := b.c.Join(a.c.AdvertiseAddr())
	require.NoError(t, err)
	_, err = c.c.Join(a.c.AdvertiseAddr())
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(b.c.Regions()) == 3 }, testWait, testTick)

	b.stop()
	require.True(t, a.c.ForceLeaveMember("b1.west"))
	require.False(t, a.c.ForceLeaveMember("a1.east"))
	require.Equal(t, []string{"b1.west"}, memberNames(a.c.WANMembers(), wan.StatusLeft))
	require.Eventually(t, func() bool {
		return slices.Equal(memberNames(c.c.WANMembers(), wan.StatusLeft), []string{"b1.west"})
	}, testWait, testTick)
	require.Equal(t, []string{"east", "north"}, c.c.Regions())
}

// A connection upgrade (alloc exec's websocket) crosses regions too.
func TestForwardToRegion_Upgrade(t *testing.T) {
	a := startNode(t, "a1", nodeOpts{expect: 1, region: "east"})
	b := startNode(t, "b1", nodeOpts{expect: 1, region: "west"})
	waitLeader(t, []*testNode{a})
	_, err := a.c.Join(b.c.AdvertiseAddr())
	require.NoError(t, err)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.c.ForwardToRegion(w, r, "west") {
			http.Error(w, "not forwarded", http.StatusTeapot)
		}
	}))
	defer front.Close()

	conn, err := net.Dial("tcp", strings.TrimPrefix(front.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(testWait)))
	_, err = io.WriteString(conn, "GET /v1/upgrade HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	for _, msg := range []string{"hello\n", "again\n"} {
		_, err = io.WriteString(conn, msg)
		require.NoError(t, err)
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "b1 "+msg, line)
	}
}

// Two federated servers that both restart at once find each other again
// from the addresses they saved.
func TestFederation_SurvivesRestartOfAll(t *testing.T) {
	lns, addrs := listeners(t, 2)
	dirA, dirB := t.TempDir(), t.TempDir()
	a := startNode(t, "a1", nodeOpts{listener: lns[0], dir: dirA, expect: 1, region: "east"})
	b := startNode(t, "b1", nodeOpts{listener: lns[1], dir: dirB, expect: 1, region: "west"})
	waitLeader(t, []*testNode{a})
	_, err := a.c.Join(b.c.AdvertiseAddr())
	require.NoError(t, err)
	// Saved after the next round.
	require.Eventually(t, func() bool {
		return slices.Equal(a.c.loadWANPeers(), []string{addrs[1]}) && slices.Equal(b.c.loadWANPeers(), []string{addrs[0]})
	}, testWait, testTick)
	a.stop()
	b.stop()

	a = startNode(t, "a1", nodeOpts{bindAddr: addrs[0], dir: dirA, expect: 1, region: "east"})
	b = startNode(t, "b1", nodeOpts{bindAddr: addrs[1], dir: dirB, expect: 1, region: "west"})
	for _, n := range []*testNode{a, b} {
		require.Eventually(t, func() bool {
			return slices.Equal(n.c.Regions(), []string{"east", "west"})
		}, testWait, testTick, n.id)
	}

	// A server never federated writes nothing.
	lone := startNode(t, "c1", nodeOpts{expect: 1, region: "north"})
	waitLeader(t, []*testNode{lone})
	time.Sleep(3 * testGossipInterval)
	_, err = os.Stat(lone.c.wanPeersPath())
	require.ErrorIs(t, err, fs.ErrNotExist)
}
