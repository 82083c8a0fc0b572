package cluster

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

func TestNew_Validation(t *testing.T) {
	_, err := New(Config{NodeID: "a", BindAddr: "127.0.0.1:0", FSM: &testFSM{}})
	require.ErrorContains(t, err, "DataDir is required")

	_, err = New(Config{DataDir: t.TempDir()})
	require.ErrorContains(t, err, "NodeID is required")
	require.ErrorContains(t, err, "FSM is required")
	require.ErrorContains(t, err, "BindAddr or Listener is required")

	_, err = New(Config{NodeID: "a", BindAddr: "127.0.0.1:0", DataDir: t.TempDir(), FSM: &testFSM{}, RaftMultiplier: 0.001})
	require.ErrorContains(t, err, "raft config")
}

func TestAdvertiseAddr(t *testing.T) {
	bound := mustTCPAddr(t, "127.0.0.1:4321")
	for _, tc := range []struct{ bound, adv, want, err string }{
		{"127.0.0.1:4321", "", "127.0.0.1:4321", ""},
		{"127.0.0.1:4321", "10.0.0.5:0", "10.0.0.5:4321", ""},
		{"127.0.0.1:4321", "server1.example:4647", "server1.example:4647", ""},
		{"0.0.0.0:4321", "", "", "not reachable"},
		{"127.0.0.1:4321", "[::]:4647", "", "not reachable"},
		{"127.0.0.1:4321", "nohostport", "", "missing port"},
	} {
		b := bound
		if tc.bound != "127.0.0.1:4321" {
			b = mustTCPAddr(t, tc.bound)
		}
		got, err := advertiseAddr(b, tc.adv)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.adv)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
	require.Equal(t, "10.0.0.1:4647", normalizeJoinAddr("10.0.0.1"))
	require.Equal(t, "[::1]:4647", normalizeJoinAddr("[::1]"))
	require.Equal(t, "h:1", normalizeJoinAddr("h:1"))
}

func TestSingleServer_BootstrapAndApply(t *testing.T) {
	n := startNode(t, "solo", nodeOpts{expect: 1})
	waitLeader(t, []*testNode{n})

	select {
	case v := <-n.c.LeaderCh():
		require.True(t, v)
	case <-time.After(testWait):
		t.Fatal("no leadership notification")
	}

	id, addr := n.c.Leader()
	require.Equal(t, "solo", id)
	require.Equal(t, n.c.Addr(), addr, "advertise defaults to the real bound port")
	require.NotContains(t, addr, ":0")

	resp, index, err := n.c.Apply([]byte("a"), testApplyTimeout)
	require.NoError(t, err)
	require.Equal(t, 1, resp)
	require.NotZero(t, index)
	mustApply(t, []*testNode{n}, "b")
	require.Equal(t, []string{"a", "b"}, n.fsm.Entries())

	_, failIndex, err := n.c.Apply([]byte("fail"), testApplyTimeout)
	require.ErrorContains(t, err, "fsm rejected entry")
	require.Greater(t, failIndex, index)

	require.NoError(t, n.c.Barrier(testApplyTimeout))
	require.Equal(t, "Leader", n.c.Stats()["state"])
	require.Zero(t, n.c.LastContact())
	require.Equal(t, []string{"solo"}, voters(n.c))
	require.FileExists(t, filepath.Join(n.dir, "raft", "raft.db"))

	require.NoError(t, n.c.Shutdown())
	require.NoError(t, n.c.Shutdown(), "idempotent")
	_, ok := <-n.c.LeaderCh()
	require.False(t, ok, "LeaderCh is closed on shutdown")
	_, _, err = n.c.Apply([]byte("c"), time.Second)
	require.ErrorIs(t, err, ErrNotLeader)
}

func TestSingleServer_RestartKeepsState(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, "solo", nodeOpts{expect: 1, dir: dir})
	waitLeader(t, []*testNode{n})
	mustApply(t, []*testNode{n}, "a", "b", "c")
	require.NoError(t, n.c.Raft().Snapshot().Error())
	mustApply(t, []*testNode{n}, "d", "e") // after the snapshot: replayed from the log
	addr := n.c.Addr()
	n.stop()

	snaps, err := os.ReadDir(filepath.Join(dir, "raft", "snapshots"))
	require.NoError(t, err)
	require.Len(t, snaps, 1)

	// Same data dir, same address, fresh FSM; bootstrap_expect is ignored
	// because raft state exists.
	n2 := startNode(t, "solo", nodeOpts{expect: 1, dir: dir, bindAddr: addr})
	waitLeader(t, []*testNode{n2})
	want := []string{"a", "b", "c", "d", "e"}
	waitFSMs(t, []*testNode{n2}, want)
	mustApply(t, []*testNode{n2}, "f")
	require.Equal(t, append(want, "f"), n2.fsm.Entries())
}

func TestThreeServers_BootstrapExpect(t *testing.T) {
	nodes := startThree(t)
	for _, n := range nodes {
		require.Eventually(t, func() bool {
			return strings.Join(voters(n.c), ",") == "s1,s2,s3"
		}, testWait, testTick, "%s voters: %v", n.id, voters(n.c))
	}
	leader := waitLeader(t, nodes)
	for _, f := range followers(nodes, leader) {
		require.False(t, f.c.IsLeader())
		require.Less(t, f.c.LastContact(), time.Second)
		_, _, err := f.c.Apply([]byte("x"), time.Second)
		require.ErrorIs(t, err, ErrNotLeader)
		require.ErrorIs(t, f.c.Barrier(time.Second), ErrNotLeader)
	}
}

func TestThreeServers_ForwardWriteToLeader(t *testing.T) {
	nodes := startThree(t)
	leader := waitLeader(t, nodes)
	follower := followers(nodes, leader)[0]

	// Through the follower's public API: forwarded over the rpc port.
	req, err := http.NewRequest(http.MethodPut, follower.api.URL+"/v1/apply?x=1", strings.NewReader("hello"))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.True(t, strings.HasPrefix(string(body), leader.id+" "), "answered by leader: %q", body)
	waitFSMs(t, nodes, []string{"hello"})

	// Reads are not forwarded by the test handler: the follower answers.
	resp, err = http.Get(follower.api.URL + "/v1/whoami")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, follower.id, string(body))

	// The peer client reaches a server's handler over its rpc port.
	resp, err = leader.c.PeerClient().Get("http://" + follower.c.AdvertiseAddr() + "/v1/whoami")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, follower.id, string(body))
	require.Equal(t, follower.id, resp.Header.Get("X-Test-Node"))
}

func TestThreeServers_LeaderFailover(t *testing.T) {
	nodes := startThree(t)
	leader := waitLeader(t, nodes)
	mustApply(t, nodes, "one", "two")
	waitFSMs(t, nodes, []string{"one", "two"})

	leader.stop()
	rest := followers(nodes, leader)
	newLeader := waitLeader(t, rest)
	require.NotEqual(t, leader.id, newLeader.id)

	mustApply(t, rest, "three")
	want := []string{"one", "two", "three"}
	waitFSMs(t, rest, want)
	require.Equal(t, want[:2], leader.fsm.Entries(), "the stopped leader kept its prefix")
}

func TestLateJoinerAddedAsVoter(t *testing.T) {
	nodes := startThree(t)
	leader := waitLeader(t, nodes)
	mustApply(t, nodes, "before")

	// Join through a follower: the join request is forwarded to the leader.
	via := followers(nodes, leader)[0]
	late := startNode(t, "s4", nodeOpts{expect: 0, join: []string{via.c.AdvertiseAddr()}})
	all := append(nodes, late)

	require.Eventually(t, func() bool {
		l := currentLeader(all)
		return l != nil && strings.Join(voters(l.c), ",") == "s1,s2,s3,s4"
	}, testWait, testTick, "s4 never became a voter")
	waitLeader(t, all)
	waitFSMs(t, all, []string{"before"})

	mustApply(t, all, "after")
	waitFSMs(t, all, []string{"before", "after"})
	require.Equal(t, "3", late.c.Stats()["num_peers"])
}

func TestJoinEndpoint_Validation(t *testing.T) {
	n := startNode(t, "solo", nodeOpts{expect: 1})
	waitLeader(t, []*testNode{n})
	url := "http://" + n.c.AdvertiseAddr() + joinPath

	req, err := http.NewRequestWithContext(context.Background(), http.MethodPut, url, strings.NewReader(`{}`))
	require.NoError(t, err)
	resp, err := n.c.PeerClient().Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, "invalid join request: ID is required; Address is required", string(body))

	// Re-joining an existing voter is a no-op.
	req, err = http.NewRequest(http.MethodPut, url,
		strings.NewReader(`{"ID":"solo","Address":"`+n.c.AdvertiseAddr()+`"}`))
	require.NoError(t, err)
	resp, err = n.c.PeerClient().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, []string{"solo"}, voters(n.c))

	// A new leader's first entry may still be applying; the self view
	// reports it once it is.
	var self SelfInfo
	require.Eventually(t, func() bool {
		resp, err := n.c.PeerClient().Get("http://" + n.c.AdvertiseAddr() + selfPath)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		self = SelfInfo{}
		require.NoError(t, json.Unmarshal(body, &self))
		return self.AppliedIndex != 0
	}, testWait, testTick, "the leader never applied an entry")
	require.Equal(t, "solo", self.ID)
	require.Equal(t, n.c.AdvertiseAddr(), self.Address)
	require.Equal(t, 1, self.BootstrapExpect)
	require.True(t, self.HasLeader)
	require.NotZero(t, self.Term, "raft progress for the leader's health view")
	require.Zero(t, self.LastContactMillis, "the leader itself")
}

// bootstrapServers must be identical on every server.
func TestBootstrapServers_Deterministic(t *testing.T) {
	c := &Cluster{cfg: Config{NodeID: "b", BootstrapExpect: 3}, advertise: "b:1", logger: testLogger("t")}
	got := c.bootstrapServers([]SelfInfo{
		{ID: "c", Address: "c:1", BootstrapExpect: 3},
		{ID: "a", Address: "a:1", BootstrapExpect: 3},
		{ID: "x", Address: "x:1", BootstrapExpect: 5},
	})
	require.Equal(t, []string{"a", "b", "c"}, serverIDs(got))
	for _, s := range got {
		require.Equal(t, raft.Voter, s.Suffrage)
		require.Equal(t, string(s.ID)+":1", string(s.Address))
	}
}

// A leader whose followers are gone still believes it leads until its
// lease check runs; VerifyLeader asks a quorum and fails. (Default reads
// rely on it: the chaos suite found a resumed, paused leader answering
// them from its stale state.) Raft counts a heartbeat answer that was
// already on its way when VerifyLeader was called, so with each follower
// allowed one such answer, the third call fails for certain.
func TestVerifyLeaderFailsWithoutQuorum(t *testing.T) {
	nodes := startThree(t)
	leader := waitLeader(t, nodes)
	require.NoError(t, leader.c.VerifyLeader(), "a leader with its quorum verifies")
	rest := followers(nodes, leader)
	for _, f := range rest {
		f.stop()
	}
	t.Logf("after the followers stopped the leader still believes it leads: %v", leader.c.IsLeader())
	var err error
	for i := 0; i < 3 && err == nil; i++ {
		err = leader.c.VerifyLeader()
		if err == nil {
			t.Logf("call %d verified on a heartbeat answer already in flight", i+1)
		}
	}
	require.ErrorIs(t, err, ErrNotLeader)
	require.ErrorIs(t, rest[0].c.VerifyLeader(), ErrNotLeader, "a follower is not the leader")
}
