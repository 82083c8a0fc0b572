package imagewatcher

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/imageresolve"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// fakeBackend is a Backend over a real state store, a fake clock and a
// registry given as a map from reference to digest.
type fakeBackend struct {
	mu      sync.Mutex
	st      *state.StateStore
	index   uint64
	now     time.Time
	tags    map[string]string
	heads   map[string]int
	regErrs []error
	// created is the image created time by digest (Created).
	created map[string]time.Time
}

func newFakeBackend() *fakeBackend {
	return &fakeBackend{st: state.NewStateStore(), index: 100, now: t0, tags: map[string]string{}, heads: map[string]int{}}
}

func (f *fakeBackend) State() *state.StateStore { return f.st }
func (f *fakeBackend) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}
func (f *fakeBackend) advance(d time.Duration) { f.mu.Lock(); f.now = f.now.Add(d); f.mu.Unlock() }
func (f *fakeBackend) setTag(ref, digest string) {
	f.mu.Lock()
	f.tags[ref] = digest
	f.mu.Unlock()
}

func (f *fakeBackend) Resolve(_ context.Context, ref imageresolve.Ref, _ *imageresolve.Auth) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heads[ref.TagRef()]++
	if len(f.regErrs) > 0 {
		err := f.regErrs[0]
		f.regErrs = f.regErrs[1:]
		return "", err
	}
	if d, ok := f.tags[ref.TagRef()]; ok {
		return d, nil
	}
	return "", &imageresolve.RegistryError{StatusCode: 404, Err: errNotFound}
}

var errNotFound = structs.NotFoundf("manifest unknown")

func (f *fakeBackend) Created(_ context.Context, _ imageresolve.Ref, digest string, _ *imageresolve.Auth) (time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.created[digest]; ok {
		return c, nil
	}
	return time.Time{}, &imageresolve.RegistryError{StatusCode: 404, Err: errNotFound}
}

func (f *fakeBackend) next() uint64 { f.mu.Lock(); defer f.mu.Unlock(); f.index++; return f.index }

func (f *fakeBackend) ApplyImageWatch(req *structs.ImageWatchUpdateRequest) error {
	return f.st.UpsertImageWatch(f.next(), req)
}

func (f *fakeBackend) RegisterJob(job *structs.Job, modifyIndex uint64, tag *structs.JobVersionTag) (uint64, error) {
	cur, err := f.st.JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return 0, err
	}
	if cur.JobModifyIndex != modifyIndex {
		return 0, structs.BadRequestf("Enforcing job modify index %d: job exists with conflicting job modify index: %d", modifyIndex, cur.JobModifyIndex)
	}
	j := job.Copy()
	j.VersionTag = tag
	if err := f.st.UpsertJob(f.next(), nil, j); err != nil {
		return 0, err
	}
	stored, err := f.st.JobByID(nil, job.Namespace, job.ID)
	return stored.Version, err
}

func autoJob(id, image string) *structs.Job {
	return &structs.Job{ID: id, Name: id, Namespace: "default", Type: "system", TaskGroups: []*structs.TaskGroup{{Name: "web",
		Tasks: []*structs.Task{{Name: "server", Driver: "docker", Config: map[string]any{
			"image": image, "auto_update": true, "auto_update_interval": "1s", "auto_update_soak": "3s"}}}}}}
}

func TestWatcher_ChecksOncePerReferenceAndRollsAfterSoak(t *testing.T) {
	b := newFakeBackend()
	ref := "reg:5000/app:stable"
	b.setTag(ref, dA)
	for _, id := range []string{"a", "b", "c"} {
		require.NoError(t, b.st.UpsertJob(b.next(), nil, autoJob(id, ref+"@"+dA)))
	}
	w := New(b, hclog.NewNullLogger(), nil, 0)
	ctx := context.Background()
	pass := func() bool { _, worked := w.pass(ctx, memdb.NewWatchSet()); return worked }

	require.True(t, pass())
	require.Equal(t, 1, b.heads[ref], "one check for three jobs")
	for pass() {
	}
	require.Equal(t, 1, b.heads[ref], "not again within the interval")
	watches, err := b.st.ImageWatches(nil)
	require.NoError(t, err)
	require.Len(t, watches, 3)

	// The tag moves; the next check sees it and the soak starts.
	b.setTag(ref, dB)
	b.advance(1200 * time.Millisecond)
	for pass() {
	}
	require.Equal(t, 2, b.heads[ref])
	job, _ := b.st.JobByID(nil, "default", "a")
	require.EqualValues(t, 0, job.Version, "soaking")

	// Once the soak is over (with a check each interval on the way; the
	// jitter is under 10% of it) every job rolls.
	for range 4 {
		b.advance(1150 * time.Millisecond)
		for pass() {
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		job, _ := b.st.JobByID(nil, "default", id)
		require.EqualValues(t, 1, job.Version, id)
		require.Equal(t, ref+"@"+dB, job.TaskGroups[0].Tasks[0].Config["image"])
		require.NotNil(t, job.VersionTag)
		require.Contains(t, job.VersionTag.Description, ref+" moved from "+dA+" to "+dB)
	}
	require.Equal(t, 6, b.heads[ref], "one check per interval")
	ws, _ := b.st.ImageWatchesByJob(nil, "default", "a")
	require.Len(t, ws, 1)
	require.Equal(t, &structs.ImageRoll{From: dA, To: dB, JobVersion: 1, Time: ws[0].LastRoll.Time}, ws[0].LastRoll)
}

func TestWatcher_ConcurrentChangeIsNotOverwritten(t *testing.T) {
	b := newFakeBackend()
	ref := "reg:5000/app:stable"
	b.setTag(ref, dB)
	require.NoError(t, b.st.UpsertJob(b.next(), nil, autoJob("web", ref+"@"+dA)))
	w := New(b, hclog.NewNullLogger(), nil, 0)
	in, err := w.gather(nil, b.Now())
	require.NoError(t, err)
	in.Checks[in.Targets[0].Key()] = checked(in.Targets[0], nil, dB, t0.Add(-time.Hour))
	d := Decide(in, &w.mem)
	require.Len(t, d.Rolls, 1)

	// A person registers a change between the decision and the roll.
	changed := autoJob("web", ref+"@"+dA)
	changed.Priority = 80
	require.NoError(t, b.st.UpsertJob(b.next(), nil, changed))
	w.roll(in, d.Rolls[0])
	job, _ := b.st.JobByID(nil, "default", "web")
	require.Equal(t, 80, job.Priority, "the person's change stays")
	require.Equal(t, ref+"@"+dA, job.TaskGroups[0].Tasks[0].Config["image"])
}

func TestWatcher_CheckNow(t *testing.T) {
	b := newFakeBackend()
	ref := "reg:5000/app:stable"
	b.setTag(ref, dA)
	require.NoError(t, b.st.UpsertJob(b.next(), nil, autoJob("web", ref+"@"+dA)))
	w := New(b, hclog.NewNullLogger(), nil, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.heads[ref] == 1 }, 5*time.Second, 5*time.Millisecond)

	cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
	defer ccancel()
	ok, err := w.CheckNow(cctx, "default", "web")
	require.NoError(t, err)
	require.True(t, ok)
	b.mu.Lock()
	require.Equal(t, 2, b.heads[ref], "checked at once, before the interval")
	b.mu.Unlock()

	ok, err = w.CheckNow(cctx, "default", "nosuch")
	require.NoError(t, err)
	require.False(t, ok)
	cancel()
	<-done
}

func TestWatcher_TooManyRequestsHoldsTheRegistryForRetryAfter(t *testing.T) {
	b := newFakeBackend()
	ref := "reg:5000/app:stable"
	b.setTag(ref, dA)
	b.regErrs = []error{&imageresolve.RegistryError{StatusCode: 429, RetryAfter: 10 * time.Second, Err: errNotFound}}
	require.NoError(t, b.st.UpsertJob(b.next(), nil, autoJob("web", ref+"@"+dA)))
	w := New(b, hclog.NewNullLogger(), nil, 0)
	pass := func() {
		for {
			if _, worked := w.pass(context.Background(), memdb.NewWatchSet()); !worked {
				return
			}
		}
	}
	pass()
	require.Equal(t, 1, b.heads[ref])
	cs, _ := b.st.ImageChecks(nil)
	require.Len(t, cs, 1)
	require.NotEmpty(t, cs[0].LastError, "the 429 is recorded")
	for range 9 {
		b.advance(time.Second)
		pass()
	}
	require.Equal(t, 1, b.heads[ref], "nothing sent during Retry-After although the interval is 1s")
	b.advance(1100 * time.Millisecond)
	pass()
	require.Equal(t, 2, b.heads[ref], "checked again after Retry-After")
	cs, _ = b.st.ImageChecks(nil)
	require.Empty(t, cs[0].LastError)
}
