package stream

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func ev(topic Topic, key, ns string, filter ...string) Event {
	return Event{Topic: topic, Key: key, Namespace: ns, FilterKeys: filter}
}

// next reads one batch or fails after a short wait.
func next(t *testing.T, s *Subscription) (Batch, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	return s.Next(ctx)
}

func TestSubscriptionFilters(t *testing.T) {
	cases := []struct {
		name   string
		req    SubscribeRequest
		events []Event
		want   []string // keys of the delivered events
	}{
		{"everything", SubscribeRequest{}, []Event{ev(TopicJob, "web", "default"), ev(TopicNode, "n1", "")}, []string{"web", "n1"}},
		{"topic wildcard key", SubscribeRequest{Topics: map[Topic][]string{TopicJob: {"*"}}},
			[]Event{ev(TopicJob, "web", "default"), ev(TopicNode, "n1", "")}, []string{"web"}},
		{"topic and key", SubscribeRequest{Topics: map[Topic][]string{TopicJob: {"api"}}},
			[]Event{ev(TopicJob, "web", "default"), ev(TopicJob, "api", "default")}, []string{"api"}},
		{"filter key", SubscribeRequest{Topics: map[Topic][]string{TopicAllocation: {"web"}}},
			[]Event{ev(TopicAllocation, "a1", "default", "web", "d1"), ev(TopicAllocation, "a2", "default", "api")}, []string{"a1"}},
		{"all topics", SubscribeRequest{Topics: map[Topic][]string{TopicAll: {"*"}}},
			[]Event{ev(TopicEvaluation, "e1", "default"), ev(TopicDeployment, "d1", "default")}, []string{"e1", "d1"}},
		{"namespace", SubscribeRequest{Namespace: "default"},
			[]Event{ev(TopicJob, "web", "other"), ev(TopicJob, "api", "default"), ev(TopicNode, "n1", "")}, []string{"api", "n1"}},
		{"all namespaces", SubscribeRequest{Namespace: "*"},
			[]Event{ev(TopicJob, "web", "other"), ev(TopicJob, "api", "default")}, []string{"web", "api"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBroker(10)
			b.Publish(5, tc.events)
			s := b.Subscribe(tc.req)
			batch, err := next(t, s)
			require.NoError(t, err)
			require.Equal(t, uint64(5), batch.Index)
			var got []string
			for _, e := range batch.Events {
				got = append(got, e.Key)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestSubscriptionResumesFromIndex(t *testing.T) {
	b := NewBroker(10)
	for i := uint64(1); i <= 5; i++ {
		b.Publish(i*10, []Event{ev(TopicJob, "web", "")})
	}
	s := b.Subscribe(SubscribeRequest{Index: 30})
	for _, want := range []uint64{30, 40, 50} {
		batch, err := next(t, s)
		require.NoError(t, err)
		require.Equal(t, want, batch.Index)
	}
	_, err := next(t, s)
	require.ErrorIs(t, err, context.DeadlineExceeded, "nothing newer yet")

	// A batch published while the subscriber waits wakes it.
	done := make(chan Batch, 1)
	go func() {
		batch, _ := s.Next(context.Background())
		done <- batch
	}()
	time.Sleep(20 * time.Millisecond)
	b.Publish(60, []Event{ev(TopicJob, "web", "")})
	select {
	case batch := <-done:
		require.Equal(t, uint64(60), batch.Index)
	case <-time.After(2 * time.Second):
		t.Fatal("subscriber not woken by publish")
	}
}

func TestSubscriptionSkipsUnmatchedBatches(t *testing.T) {
	b := NewBroker(10)
	b.Publish(1, []Event{ev(TopicNode, "n1", "")})
	b.Publish(2, []Event{ev(TopicJob, "web", "")})
	b.Publish(3, []Event{ev(TopicNode, "n1", "")})
	s := b.Subscribe(SubscribeRequest{Topics: map[Topic][]string{TopicJob: {"*"}}})
	batch, err := next(t, s)
	require.NoError(t, err)
	require.Equal(t, uint64(2), batch.Index)
	_, err = next(t, s)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestBufferBoundAndLag(t *testing.T) {
	b := NewBroker(3)
	for i := uint64(1); i <= 5; i++ {
		b.Publish(i, []Event{ev(TopicJob, "web", "")})
	}
	// An index older than the buffer starts at the oldest kept entry.
	s := b.Subscribe(SubscribeRequest{Index: 1})
	batch, err := next(t, s)
	require.NoError(t, err)
	require.Equal(t, uint64(3), batch.Index)

	// Four more entries push out entries the subscriber has not read.
	for i := uint64(6); i <= 9; i++ {
		b.Publish(i, []Event{ev(TopicJob, "web", "")})
	}
	_, err = next(t, s)
	require.ErrorIs(t, err, ErrSubscriptionLagged)

	// Empty batches are not kept.
	b.Publish(10, nil)
	s2 := b.Subscribe(SubscribeRequest{})
	var idx []uint64
	for {
		batch, err := next(t, s2)
		if err != nil {
			break
		}
		idx = append(idx, batch.Index)
	}
	require.Equal(t, []uint64{7, 8, 9}, idx)
}

func TestResetClosesSubscriptions(t *testing.T) {
	b := NewBroker(3)
	b.Publish(1, []Event{ev(TopicJob, "web", "")})
	s := b.Subscribe(SubscribeRequest{})
	errc := make(chan error, 1)
	_, err := next(t, s)
	require.NoError(t, err)
	go func() {
		_, err := s.Next(context.Background())
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	b.Reset()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, ErrSubscriptionClosed)
	case <-time.After(2 * time.Second):
		t.Fatal("subscriber not woken by reset")
	}
	// A new subscription sees only what comes after the reset.
	b.Publish(2, []Event{ev(TopicJob, "api", "")})
	batch, err := next(t, b.Subscribe(SubscribeRequest{}))
	require.NoError(t, err)
	require.Equal(t, "api", batch.Events[0].Key)
}
