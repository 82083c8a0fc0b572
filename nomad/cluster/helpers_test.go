package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

const (
	// heartbeat/election 300ms, lease 150ms, commit 15ms: fast, yet no
	// leadership churn with -race on a loaded 2-CPU machine.
	testRaftMultiplier = 0.3
	testRetryInterval  = 100 * time.Millisecond
	testGossipInterval = 100 * time.Millisecond
	testWait           = 5 * time.Second
	testTick           = 20 * time.Millisecond
	testApplyTimeout   = 2 * time.Second
)

// testFSM appends every entry; "fail" makes Apply return an error value.
type testFSM struct {
	mu      sync.Mutex
	entries []string
}

func (f *testFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	if string(l.Data) == "fail" {
		return errors.New("fsm rejected entry")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = append(f.entries, string(l.Data))
	return len(f.entries)
}

func (f *testFSM) Snapshot() (raft.FSMSnapshot, error) {
	return &testSnapshot{entries: f.Entries()}, nil
}

func (f *testFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var entries []string
	if err := json.NewDecoder(rc).Decode(&entries); err != nil {
		return err
	}
	f.mu.Lock()
	f.entries = entries
	f.mu.Unlock()
	return nil
}

func (f *testFSM) Entries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.entries)
}

type testSnapshot struct{ entries []string }

func (s *testSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(s.entries); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *testSnapshot) Release() {}

// testNode is one server: cluster, FSM, and a public API server wrapping
// the same handler the cluster serves to peers.
type testNode struct {
	id  string
	dir string
	c   *Cluster
	fsm *testFSM
	api *httptest.Server
}

type nodeOpts struct {
	listener net.Listener
	bindAddr string
	dir      string
	expect   int
	join     []string
	tls      *TLS
	region   string
}

// testHandler: GET /v1/whoami answers the NodeID; GET /v1/headers the
// request's headers as JSON; PUT /v1/apply forwards
// to the leader or applies the body and answers "<NodeID> <index>".
func testHandler(id string, cl *atomic.Pointer[Cluster]) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/whoami", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Test-Node", id)
		_, _ = io.WriteString(w, id)
	})
	mux.HandleFunc("GET /v1/headers", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(r.Header)
	})
	// GET /v1/upgrade switches to a line echo, answering lines prefixed
	// with the NodeID.
	mux.HandleFunc("GET /v1/upgrade", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "upgrade to echo expected", http.StatusBadRequest)
			return
		}
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "echo")
		w.WriteHeader(http.StatusSwitchingProtocols)
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		for {
			line, err := rw.ReadString('\n')
			if err != nil {
				return
			}
			_, _ = rw.WriteString(id + " " + line)
			_ = rw.Flush()
		}
	})
	mux.HandleFunc("PUT /v1/apply", func(w http.ResponseWriter, r *http.Request) {
		c := cl.Load()
		if c == nil {
			http.Error(w, "not started", http.StatusServiceUnavailable)
			return
		}
		if c.ForwardToLeader(w, r) {
			return
		}
		body, _ := io.ReadAll(r.Body)
		_, index, err := c.Apply(body, testApplyTimeout)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = fmt.Fprintf(w, "%s %d", id, index)
	})
	return mux
}

func testLogger(name string) hclog.Logger {
	level := hclog.Off
	if v := os.Getenv("DROVER_TEST_LOG"); v != "" {
		level = hclog.LevelFromString(v)
	}
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: level, Output: os.Stderr})
}

func startNode(t *testing.T, id string, o nodeOpts) *testNode {
	t.Helper()
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	if o.listener == nil && o.bindAddr == "" {
		o.bindAddr = "127.0.0.1:0"
	}
	var cl atomic.Pointer[Cluster]
	h := testHandler(id, &cl)
	fsm := &testFSM{}
	c, err := New(Config{
		NodeID:          id,
		Region:          o.region,
		Datacenter:      "dc1",
		Build:           "test",
		GossipInterval:  testGossipInterval,
		BindAddr:        o.bindAddr,
		Listener:        o.listener,
		DataDir:         o.dir,
		BootstrapExpect: o.expect,
		RetryJoin:       o.join,
		RetryInterval:   testRetryInterval,
		FSM:             fsm,
		Handler:         h,
		Logger:          testLogger(id),
		RaftMultiplier:  testRaftMultiplier,
		TLS:             o.tls,
	})
	require.NoError(t, err)
	cl.Store(c)
	n := &testNode{id: id, dir: o.dir, c: c, fsm: fsm, api: httptest.NewServer(h)}
	t.Cleanup(n.stop)
	return n
}

func (n *testNode) stop() {
	n.api.Close()
	_ = n.c.Shutdown()
}

// listeners binds n loopback listeners so that peers know each other's
// addresses before any server starts.
func listeners(t *testing.T, n int) ([]net.Listener, []string) {
	t.Helper()
	lns := make([]net.Listener, n)
	addrs := make([]string, n)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns[i], addrs[i] = ln, ln.Addr().String()
	}
	return lns, addrs
}

// startThree starts servers s1..s3 with bootstrap_expect=3, each joining
// the other two, and waits for one leader known to all.
func startThree(t *testing.T) []*testNode {
	t.Helper()
	lns, addrs := listeners(t, 3)
	nodes := make([]*testNode, 3)
	for i := range nodes {
		nodes[i] = startNode(t, "s"+strconv.Itoa(i+1), nodeOpts{
			listener: lns[i], expect: 3, join: addrs,
		})
	}
	waitLeader(t, nodes)
	return nodes
}

// waitLeader waits until exactly one node leads and every node agrees.
func waitLeader(t *testing.T, nodes []*testNode) *testNode {
	t.Helper()
	var leader *testNode
	require.Eventually(t, func() bool {
		leader = nil
		for _, n := range nodes {
			if n.c.IsLeader() {
				if leader != nil {
					return false
				}
				leader = n
			}
		}
		if leader == nil {
			return false
		}
		for _, n := range nodes {
			if id, addr := n.c.Leader(); id != leader.id || addr != leader.c.AdvertiseAddr() {
				return false
			}
		}
		return true
	}, testWait, testTick, "no single agreed leader")
	return leader
}

func followers(nodes []*testNode, leader *testNode) []*testNode {
	var out []*testNode
	for _, n := range nodes {
		if n != leader {
			out = append(out, n)
		}
	}
	return out
}

// waitFSMs waits until every node's FSM holds exactly want.
func waitFSMs(t *testing.T, nodes []*testNode, want []string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, n := range nodes {
			if !slices.Equal(n.fsm.Entries(), want) {
				return false
			}
		}
		return true
	}, testWait, testTick, "FSMs did not converge to %v", want)
}

func voters(c *Cluster) []string {
	var ids []string
	for _, s := range c.Peers() {
		if s.Suffrage == raft.Voter {
			ids = append(ids, string(s.ID))
		}
	}
	slices.Sort(ids)
	return ids
}

// mustApply applies entries on whichever node leads. It retries only on
// ErrNotLeader, which means the entry was never appended; other errors
// (leadership lost while committing) are ambiguous and fail the test.
func mustApply(t *testing.T, nodes []*testNode, entries ...string) {
	t.Helper()
	for _, e := range entries {
		deadline := time.Now().Add(testWait)
		for {
			var err error
			if leader := currentLeader(nodes); leader == nil {
				err = ErrNotLeader
			} else {
				_, _, err = leader.c.Apply([]byte(e), testApplyTimeout)
			}
			if err == nil {
				break
			}
			require.ErrorIs(t, err, ErrNotLeader, "apply %q", e)
			require.True(t, time.Now().Before(deadline), "apply %q: no leader", e)
			time.Sleep(testTick)
		}
	}
}

func currentLeader(nodes []*testNode) *testNode {
	for _, n := range nodes {
		if n.c.IsLeader() {
			return n
		}
	}
	return nil
}
