package imagegc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// ImageStore removes images: the Docker driver, for the client.
type ImageStore interface {
	// RemoveImage removes an image by ID. An image still used by a
	// container fails with an "in use" error (see IsInUse); an image that
	// is gone already fails with a "not found" error (see IsNotFound).
	RemoveImage(ctx context.Context, imageID string) error
}

// Persister keeps the known images across client restarts, so that a
// restarted client still removes the images it leased before.
type Persister interface {
	// LoadKnownImages returns the stored known images (empty when none).
	LoadKnownImages() (map[string]KnownImage, error)
	// SaveKnownImages replaces the stored known images with known.
	SaveKnownImages(known map[string]KnownImage) error
}

var (
	// ErrInUse may be wrapped by an ImageStore for an image a container
	// still uses.
	ErrInUse = errors.New("imagegc: image in use")
	// ErrNotFound may be wrapped by an ImageStore for an image that does
	// not exist.
	ErrNotFound = errors.New("imagegc: image not found")
)

// IsInUse reports whether err says the image is in use: it wraps ErrInUse,
// or an error with a Conflict() method (the errdefs convention of the
// Docker and containerd clients).
func IsInUse(err error) bool {
	var c interface{ Conflict() }
	return errors.Is(err, ErrInUse) || errors.As(err, &c)
}

// IsNotFound reports whether err says the image does not exist: it wraps
// ErrNotFound, or an error with a NotFound() method (errdefs convention).
func IsNotFound(err error) bool {
	var nf interface{ NotFound() }
	return errors.Is(err, ErrNotFound) || errors.As(err, &nf)
}

// Clock is the Collector's time source.
type Clock interface {
	Now() time.Time
	// NewTimer returns a channel that receives once, after d, and a stop
	// function.
	NewTimer(d time.Duration) (<-chan time.Time, func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}

// RealClock is the wall clock (and the fake one inside a synctest bubble).
func RealClock() Clock { return realClock{} }

// Defaults.
const (
	DefaultRetryInterval = time.Minute
	DefaultRemoveTimeout = time.Minute
)

// Config configures a Collector.
type Config struct {
	Store     ImageStore // required
	Persister Persister  // nil: known images live in memory only
	// Delay is how long an image stays unleased before it is removed.
	Delay time.Duration
	// RetryInterval is the wait after a failed removal; 0 means
	// DefaultRetryInterval.
	RetryInterval time.Duration
	// RemoveTimeout bounds one RemoveImage call; 0 means
	// DefaultRemoveTimeout.
	RemoveTimeout time.Duration
	Clock         Clock        // default RealClock()
	Logger        hclog.Logger // default: null logger
}

// Collector removes the images this client leased once they have been
// unleased for Config.Delay. It only waits, for a lease change or the time
// Plan returns, and carries out Plan's removals; see the package doc.
// Create it with NewCollector; its methods are safe for concurrent use.
type Collector struct {
	store     ImageStore
	persister Persister
	delay     time.Duration
	retry     time.Duration
	timeout   time.Duration
	clock     Clock
	logger    hclog.Logger

	changed chan struct{} // room for one token: leases changed

	mu        sync.Mutex
	leases    map[string]LeaseReasons // latest lease set; guarded by mu
	haveLease bool                    // SetLeases was called; guarded by mu
	known     map[string]KnownImage   // guarded by mu; written by Run only
}

// NewCollector returns a collector with the known images of cfg.Persister.
// It removes nothing until Run, and Run nothing until the first SetLeases.
func NewCollector(cfg Config) (*Collector, error) {
	if cfg.Store == nil {
		return nil, errors.New("imagegc: Store is required")
	}
	c := &Collector{
		store:     cfg.Store,
		persister: cfg.Persister,
		delay:     max(cfg.Delay, 0),
		retry:     cfg.RetryInterval,
		timeout:   cfg.RemoveTimeout,
		clock:     cfg.Clock,
		logger:    cfg.Logger,
		changed:   make(chan struct{}, 1),
		known:     map[string]KnownImage{},
	}
	if c.retry <= 0 {
		c.retry = DefaultRetryInterval
	}
	if c.timeout <= 0 {
		c.timeout = DefaultRemoveTimeout
	}
	if c.clock == nil {
		c.clock = RealClock()
	}
	if c.logger == nil {
		c.logger = hclog.NewNullLogger()
	}
	if c.persister != nil {
		known, err := c.persister.LoadKnownImages()
		if err != nil {
			return nil, fmt.Errorf("imagegc: loading known images: %w", err)
		}
		maps.Copy(c.known, known)
	}
	return c, nil
}

// SetLeases replaces the lease set (image ID → reasons); the collector
// keeps a copy. It does not block.
func (c *Collector) SetLeases(leases map[string]LeaseReasons) {
	cp := maps.Clone(leases)
	if cp == nil {
		cp = map[string]LeaseReasons{}
	}
	c.mu.Lock()
	c.leases, c.haveLease = cp, true
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Known returns a copy of the known images.
func (c *Collector) Known() map[string]KnownImage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.known)
}

// Run collects until ctx ends: after each lease change and at each wake
// time it reconciles the known images with the leases (persisting them),
// then removes what Plan says. Nothing happens before the first SetLeases:
// until the client has computed its leases, every image may be in use.
func (c *Collector) Run(ctx context.Context) {
	var timerC <-chan time.Time
	stop := func() bool { return false }
	defer func() { stop() }()
	for {
		wake := c.pass(ctx)
		stop()
		timerC, stop = nil, func() bool { return false }
		if !wake.IsZero() {
			timerC, stop = c.clock.NewTimer(max(wake.Sub(c.clock.Now()), 0))
		}
		select {
		case <-ctx.Done():
			return
		case <-c.changed:
		case <-timerC:
		}
	}
}

// current returns the latest lease set and whether there is one.
func (c *Collector) current() (map[string]LeaseReasons, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leases, c.haveLease
}

// pass reconciles, removes what is due, and returns the next wake time.
func (c *Collector) pass(ctx context.Context) time.Time {
	leases, ok := c.current()
	if !ok {
		return time.Time{}
	}
	now := c.clock.Now()
	c.mu.Lock()
	known, changed := Reconcile(c.known, leases, now)
	c.known = known
	c.mu.Unlock()
	if changed {
		c.save(known)
	}
	remove, wake := Plan(Input{Leases: leases, Known: known, Delay: c.delay}, now)
	for _, id := range remove {
		if ctx.Err() != nil {
			return time.Time{}
		}
		if latest, _ := c.current(); hasKey(latest, id) {
			continue // leased meanwhile: the next pass (already signalled) reconciles it
		}
		if retryAt, ok := c.removeOne(ctx, id); ok {
			c.logger.Info("removed unused image", "image_id", id)
		} else if !retryAt.IsZero() && (wake.IsZero() || retryAt.Before(wake)) {
			wake = retryAt
		}
	}
	if len(remove) > 0 {
		c.save(c.Known())
	}
	return wake
}

func hasKey(m map[string]LeaseReasons, k string) bool {
	_, ok := m[k]
	return ok
}

// removeOne removes id; on success (or when it is gone already) it forgets
// it and reports true, otherwise it records and returns its retry time.
func (c *Collector) removeOne(ctx context.Context, id string) (retryAt time.Time, ok bool) {
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	err := c.store.RemoveImage(rctx, id)
	cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil || IsNotFound(err) {
		delete(c.known, id)
		return time.Time{}, true
	}
	if ctx.Err() != nil {
		return time.Time{}, false // shutting down: nothing to record
	}
	k := c.known[id]
	k.RetryAt = c.clock.Now().Add(c.retry)
	c.known[id] = k
	if IsInUse(err) {
		c.logger.Debug("image still in use; will retry", "image_id", id, "retry_at", k.RetryAt)
	} else {
		c.logger.Warn("failed to remove image; will retry", "image_id", id, "error", err, "retry_at", k.RetryAt)
	}
	return k.RetryAt, false
}

// save persists known, logging failures (the next change saves again).
func (c *Collector) save(known map[string]KnownImage) {
	if c.persister == nil {
		return
	}
	if err := c.persister.SaveKnownImages(known); err != nil {
		c.logger.Warn("failed to persist known images", "error", err)
	}
}
