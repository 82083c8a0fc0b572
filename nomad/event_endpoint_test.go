package nomad

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/stream"
)

// TestEventSubscribe_FiltersByCaller: the server keeps, of the stream,
// what the caller may see (read-job in the job's namespace, node:read for
// nodes), whatever Allow the request carried; a nil caller sees all.
func TestEventSubscribe_FiltersByCaller(t *testing.T) {
	srv := queryTestServer(t)
	start := srv.State().LatestIndex() + 1
	node := seedNode(t, srv)
	mine, theirs := mock.Job("mine"), mock.Job("theirs")
	mine.Namespace, theirs.Namespace = "team-a", "team-b"
	seedJob(t, srv, mine)
	seedJob(t, srv, theirs)

	everything := func(stream.Event) bool { return true }
	keys := func(a *acl.ACL) []string {
		t.Helper()
		sub := srv.EventSubscribe(a, stream.SubscribeRequest{Namespace: "*", Index: start, Allow: everything})
		var out []string
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		for {
			b, err := sub.Next(ctx)
			if err != nil {
				return out
			}
			for _, e := range b.Events {
				out = append(out, string(e.Topic)+":"+e.Key)
			}
		}
	}

	all := keys(nil)
	require.Contains(t, all, "Node:"+node.ID)
	require.Contains(t, all, "Job:mine")
	require.Contains(t, all, "Job:theirs")

	teamA := policyACL(t, `namespace "team-a" { policy = "read" }`)
	require.ElementsMatch(t, []string{"Job:mine"}, onlyTopics(keys(teamA), "Job", "Node"))

	nodeReader := policyACL(t, `node { policy = "read" }`)
	require.ElementsMatch(t, []string{"Node:" + node.ID}, onlyTopics(keys(nodeReader), "Job", "Node"))
}

// onlyTopics keeps the "Topic:key" entries of the topics named.
func onlyTopics(entries []string, topics ...string) []string {
	out := []string{}
	for _, e := range entries {
		for _, t := range topics {
			if len(e) > len(t) && e[:len(t)+1] == t+":" {
				out = append(out, e)
			}
		}
	}
	return out
}
