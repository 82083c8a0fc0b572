package imagegc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeStore records removals; fail[id] is returned (once per entry of the
// slice) before removals of id succeed.
type fakeStore struct {
	mu      sync.Mutex
	fail    map[string][]error
	calls   []string
	removed []string
}

func (s *fakeStore) RemoveImage(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, id)
	if errs := s.fail[id]; len(errs) > 0 {
		s.fail[id] = errs[1:]
		return errs[0]
	}
	s.removed = append(s.removed, id)
	return nil
}

func (s *fakeStore) removals() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.removed...)
}

func (s *fakeStore) attempts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// memPersister is an in-memory Persister.
type memPersister struct {
	mu    sync.Mutex
	known map[string]KnownImage
	saves int
}

func (p *memPersister) LoadKnownImages() (map[string]KnownImage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.known), nil
}

func (p *memPersister) SaveKnownImages(known map[string]KnownImage) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.known = maps.Clone(known)
	p.saves++
	return nil
}

func (p *memPersister) snapshot() map[string]KnownImage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.known)
}

const delay = 3 * time.Minute

// startCollector runs a collector in the synctest bubble until the test
// ends.
func startCollector(t *testing.T, cfg Config) *Collector {
	t.Helper()
	if cfg.Delay == 0 {
		cfg.Delay = delay
	}
	c, err := NewCollector(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return c
}

// sleep advances the bubble's clock by d and lets the collector settle.
func sleep(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func leases(ids ...string) map[string]LeaseReasons {
	m := map[string]LeaseReasons{}
	for _, id := range ids {
		m[id] = LeaseRunning
	}
	return m
}

func TestCollector_RemovesAfterDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, p := &fakeStore{}, &memPersister{}
		c := startCollector(t, Config{Store: store, Persister: p})
		c.SetLeases(leases("a", "b"))
		synctest.Wait()
		require.Equal(t, map[string]KnownImage{"a": {}, "b": {}}, p.snapshot())

		start := time.Now()
		c.SetLeases(leases("b"))
		synctest.Wait()
		require.Equal(t, start, c.Known()["a"].FirstUnleasedAt)
		require.Equal(t, start, p.snapshot()["a"].FirstUnleasedAt)

		sleep(delay - time.Second)
		require.Empty(t, store.attempts())
		sleep(time.Second)
		require.Equal(t, []string{"a"}, store.removals())
		require.Equal(t, map[string]KnownImage{"b": {}}, c.Known())
		require.Equal(t, map[string]KnownImage{"b": {}}, p.snapshot())

		sleep(time.Hour)
		require.Equal(t, []string{"a"}, store.attempts(), "a leased image is never removed")
	})
}

func TestCollector_LeaseReacquiredCancelsRemoval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		c := startCollector(t, Config{Store: store})
		c.SetLeases(leases("a"))
		synctest.Wait()
		c.SetLeases(leases())
		sleep(delay - time.Minute)
		c.SetLeases(map[string]LeaseReasons{"a": LeasePrepared}) // a replacement pulled it again
		sleep(time.Hour)
		require.Empty(t, store.attempts())
		require.Equal(t, map[string]KnownImage{"a": {}}, c.Known())

		// Unleased again: the delay starts over.
		c.SetLeases(leases())
		sleep(delay - time.Second)
		require.Empty(t, store.attempts())
		sleep(time.Second)
		require.Equal(t, []string{"a"}, store.removals())
	})
}

func TestCollector_InUseRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conflict := fmt.Errorf("docker: %w", ErrInUse)
		store := &fakeStore{fail: map[string][]error{"a": {conflict, errors.New("daemon hiccup")}}}
		p := &memPersister{}
		c := startCollector(t, Config{Store: store, Persister: p, RetryInterval: 10 * time.Minute})
		c.SetLeases(leases("a"))
		synctest.Wait()
		c.SetLeases(leases())
		sleep(delay)
		require.Equal(t, []string{"a"}, store.attempts())
		require.Empty(t, store.removals())
		require.Equal(t, time.Now().Add(10*time.Minute), c.Known()["a"].RetryAt)
		require.Equal(t, c.Known(), p.snapshot(), "retry time persisted")

		sleep(10*time.Minute - time.Second)
		require.Len(t, store.attempts(), 1)
		sleep(time.Second)
		require.Len(t, store.attempts(), 2, "retried; failed again with another error")
		sleep(10 * time.Minute)
		require.Equal(t, []string{"a"}, store.removals())
		require.Empty(t, c.Known())
	})
}

// notFoundErr follows the errdefs convention.
type notFoundErr struct{}

func (notFoundErr) Error() string { return "No such image" }
func (notFoundErr) NotFound()     {}

type conflictErr struct{}

func (conflictErr) Error() string { return "image is being used by a container" }
func (conflictErr) Conflict()     {}

func TestErrorClassification(t *testing.T) {
	require.True(t, IsNotFound(fmt.Errorf("x: %w", notFoundErr{})))
	require.True(t, IsNotFound(ErrNotFound))
	require.False(t, IsNotFound(conflictErr{}))
	require.True(t, IsInUse(fmt.Errorf("x: %w", conflictErr{})))
	require.True(t, IsInUse(ErrInUse))
	require.False(t, IsInUse(errors.New("other")))
}

func TestCollector_GoneImageForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{fail: map[string][]error{"a": {notFoundErr{}}}}
		c := startCollector(t, Config{Store: store, Delay: time.Minute})
		c.SetLeases(leases("a"))
		synctest.Wait()
		c.SetLeases(leases())
		sleep(time.Minute)
		require.Equal(t, []string{"a"}, store.attempts())
		require.Empty(t, c.Known())
		sleep(time.Hour)
		require.Len(t, store.attempts(), 1)
	})
}

func TestCollector_NothingBeforeFirstLeases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		p := &memPersister{known: map[string]KnownImage{"old": unleasedAt(time.Now().Add(-time.Hour))}}
		c := startCollector(t, Config{Store: store, Persister: p})
		sleep(time.Hour)
		require.Empty(t, store.attempts(), "leases unknown: anything may be in use")

		c.SetLeases(leases("x"))
		synctest.Wait()
		require.Equal(t, []string{"old"}, store.removals(), "due long ago")
	})
}

func TestCollector_RestartRemembersKnownImages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, p := &fakeStore{}, &memPersister{}
		c1, err := NewCollector(Config{Store: store, Persister: p, Delay: delay})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); c1.Run(ctx) }()
		c1.SetLeases(leases("a", "b"))
		synctest.Wait()
		unleased := time.Now()
		c1.SetLeases(leases("b"))
		sleep(time.Minute)
		cancel() // client stops before a is due
		<-done
		require.Empty(t, store.attempts())

		sleep(time.Minute)
		c2 := startCollector(t, Config{Store: store, Persister: p})
		require.Equal(t, map[string]KnownImage{"a": unleasedAt(unleased), "b": {}}, c2.Known())
		c2.SetLeases(leases()) // b's allocation went while the client was down
		synctest.Wait()
		require.Equal(t, time.Now(), c2.Known()["b"].FirstUnleasedAt)
		sleep(delay - 2*time.Minute - time.Second)
		require.Empty(t, store.attempts())
		sleep(time.Second)
		require.Equal(t, []string{"a"}, store.removals(), "a's delay counts from before the restart")
		sleep(2 * time.Minute)
		require.Equal(t, []string{"a", "b"}, store.removals())
		require.Empty(t, p.snapshot())
	})
}

func TestNewCollector_Errors(t *testing.T) {
	_, err := NewCollector(Config{})
	require.ErrorContains(t, err, "Store is required")
	_, err = NewCollector(Config{Store: &fakeStore{}, Persister: failingPersister{}})
	require.ErrorContains(t, err, "loading known images: disk on fire")
}

type failingPersister struct{}

func (failingPersister) LoadKnownImages() (map[string]KnownImage, error) {
	return nil, errors.New("disk on fire")
}
func (failingPersister) SaveKnownImages(map[string]KnownImage) error { return nil }
