package e2e

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// startThreeServers starts a three-server cluster and returns its servers,
// the leader and the followers.
func startThreeServers(t testing.TB) (all []*agentProc, leader *agentProc, followers []*agentProc) {
	t.Helper()
	type ports struct{ http, rpc int }
	var ps []ports
	var rpcAddrs []string
	for i := 0; i < 3; i++ {
		p := ports{freePort(t), freePort(t)}
		ps = append(ps, p)
		rpcAddrs = append(rpcAddrs, fmt.Sprintf("127.0.0.1:%d", p.rpc))
	}
	for i, p := range ps {
		var others []string
		for j, addr := range rpcAddrs {
			if j != i {
				others = append(others, addr)
			}
		}
		spec := serverSpec{name: fmt.Sprintf("s%d", i+1), bootstrapExpect: 3, retryJoin: others}
		all = append(all, newServerOnPorts(t, spec, p.http, p.rpc))
	}
	leaderAddr := waitLeader(t, all...)
	for _, s := range all {
		if s.rpcAddr() == leaderAddr {
			leader = s
		} else {
			followers = append(followers, s)
		}
	}
	require.NotNil(t, leader, "leader %s is one of ours", leaderAddr)
	return all, leader, followers
}

// Read-your-writes across servers: a job registered through one follower
// is seen by an immediate default read through the other, every time; a
// ?stale read is answered locally, even with no leader at all.
func TestReadYourWritesAcrossServers(t *testing.T) {
	_, leader, followers := startThreeServers(t)
	writer, reader := followers[0].client(t), followers[1].client(t)

	const tries = 100
	for i := 0; i < tries; i++ {
		id := fmt.Sprintf("ryw-%d", i)
		_, _, err := writer.Jobs().Register(systemJob(id, "1"), nil)
		require.NoError(t, err)
		job, qm, err := reader.Jobs().Info(id, nil)
		require.NoError(t, err, "try %d: a default read through another follower sees the write", i)
		require.Equal(t, id, *job.ID)
		require.True(t, qm.KnownLeader)
		require.Zero(t, qm.LastContact, "answered by the leader")
	}

	// A stale read is answered by the follower itself, with its contact age.
	require.Eventually(t, func() bool {
		_, _, err := reader.Jobs().Info(fmt.Sprintf("ryw-%d", tries-1), &api.QueryOptions{AllowStale: true})
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)

	// Without a quorum there is no leader: a stale read is still answered,
	// and says so.
	leader.kill()
	followers[0].kill()
	var qm *api.QueryMeta
	require.Eventually(t, func() bool {
		var err error
		var job *api.Job
		job, qm, err = reader.Jobs().Info("ryw-0", &api.QueryOptions{AllowStale: true})
		return err == nil && job != nil && !qm.KnownLeader
	}, 20*time.Second, 100*time.Millisecond, "a stale read answers while no leader is known\n%s", followers[1].logs())
	require.Greater(t, qm.LastContact, time.Duration(0), "the last contact with a leader is reported")
}

// A lone server killed with SIGKILL in the middle of a stream of writes
// answers its first default read after the restart with every write it
// acknowledged.
func TestFirstReadAfterCrashSeesAcknowledgedWrites(t *testing.T) {
	srv := newServer(t, serverSpec{name: "solo", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)

	var (
		mu    sync.Mutex
		acked []string
		stop  atomic.Bool
		wg    sync.WaitGroup
	)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				id := fmt.Sprintf("crash-%d-%d", w, i)
				if _, _, err := c.Jobs().Register(systemJob(id, "1"), nil); err != nil {
					return // the server is gone
				}
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
			}
		}()
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 1500
	}, 60*time.Second, 20*time.Millisecond)
	srv.kill() // mid-stream
	stop.Store(true)
	wg.Wait()
	t.Logf("%d writes acknowledged before SIGKILL", len(acked))

	srv.start(t)
	var jobs []*api.JobListStub
	require.Eventually(t, func() bool {
		var err error
		jobs, _, err = c.Jobs().List(nil)
		return err == nil // the first answer counts
	}, 30*time.Second, 10*time.Millisecond)
	have := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		have[j.ID] = true
	}
	var missing []string
	for _, id := range acked {
		if !have[id] {
			missing = append(missing, id)
		}
	}
	require.Empty(t, missing, "%d of %d acknowledged writes missing from the first read", len(missing), len(acked))
}
