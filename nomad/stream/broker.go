package stream

import (
	"context"
	"errors"
	"sync"
)

// DefaultBufferSize is how many raft entries' events a broker keeps when
// its configuration says 0 (Nomad's event_buffer_size default).
const DefaultBufferSize = 100

// Errors a subscription ends with.
var (
	// ErrSubscriptionClosed: the broker dropped its events (the state was
	// replaced by a snapshot restore, or the server is shutting down); the
	// subscriber should subscribe again.
	ErrSubscriptionClosed = errors.New("subscription closed by server, client should resubscribe")
	// ErrSubscriptionLagged: the subscriber fell so far behind that events
	// it had not read left the buffer.
	ErrSubscriptionLagged = errors.New("subscription closed by server: events were dropped before the client read them, client should resubscribe")
)

// Broker keeps the newest events in a ring of batches and wakes
// subscribers when a batch arrives. It is safe for concurrent use.
type Broker struct {
	mu   sync.Mutex
	ring []Batch // capacity is the buffer size
	// start is the ring position of the oldest batch, n the number of
	// batches held.
	start, n int
	// dropped is the index of the newest batch that left the ring (0
	// when none did).
	dropped uint64
	// notify is closed (and replaced) on every publish and reset.
	notify chan struct{}
	// gen counts resets; a subscription of an older generation is closed.
	gen uint64
}

// NewBroker returns a broker keeping the events of the newest size raft
// entries (that produced any); 0 means DefaultBufferSize.
func NewBroker(size int) *Broker {
	if size <= 0 {
		size = DefaultBufferSize
	}
	return &Broker{ring: make([]Batch, size), notify: make(chan struct{})}
}

// Publish appends the events of the entry at index. Indexes must grow; a
// batch with no events is not kept.
func (b *Broker) Publish(index uint64, events []Event) {
	if len(events) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n == len(b.ring) {
		b.dropped = b.ring[b.start].Index
		b.ring[b.start] = Batch{}
		b.start = (b.start + 1) % len(b.ring)
		b.n--
	}
	b.ring[(b.start+b.n)%len(b.ring)] = Batch{Index: index, Events: events}
	b.n++
	close(b.notify)
	b.notify = make(chan struct{})
}

// Reset drops every buffered event and closes every subscription: the
// state they described was replaced.
func (b *Broker) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.ring {
		b.ring[i] = Batch{}
	}
	b.start, b.n, b.dropped = 0, 0, 0
	b.gen++
	close(b.notify)
	b.notify = make(chan struct{})
}

// SubscribeRequest says which events a subscriber wants.
type SubscribeRequest struct {
	// Topics maps a topic (or TopicAll) to the keys wanted; the key "*"
	// matches every event of the topic. Empty means every event.
	Topics map[Topic][]string
	// Namespace limits namespaced events to one namespace; "*" means all.
	// Events without a namespace (nodes) always match.
	Namespace string
	// Index is the first raft index wanted. When it is older than the
	// buffer, the stream starts at the oldest buffered entry; 0 means from
	// the oldest buffered entry.
	Index uint64
	// Allow, when set, drops the events it refuses: what the subscriber's
	// token may not see.
	Allow func(Event) bool
}

// Subscription reads matching events in index order.
type Subscription struct {
	b   *Broker
	req SubscribeRequest
	gen uint64
	// next is the smallest index not yet read; started is false until
	// the first batch was read.
	next    uint64
	started bool
}

// Subscribe starts a subscription.
func (b *Broker) Subscribe(req SubscribeRequest) *Subscription {
	b.mu.Lock()
	defer b.mu.Unlock()
	return &Subscription{b: b, req: req, gen: b.gen, next: req.Index}
}

// Next blocks until a batch with events matching the subscription arrives
// and returns those events, or returns ctx's error, ErrSubscriptionClosed
// or ErrSubscriptionLagged.
func (s *Subscription) Next(ctx context.Context) (Batch, error) {
	for {
		batch, wait, err := s.poll()
		if err != nil || len(batch.Events) > 0 {
			return batch, err
		}
		select {
		case <-ctx.Done():
			return Batch{}, ctx.Err()
		case <-wait:
		}
	}
}

// poll returns the next matching batch, or an empty batch and the channel
// closed on the broker's next publish.
func (s *Subscription) poll() (Batch, <-chan struct{}, error) {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.gen != b.gen {
		return Batch{}, nil, ErrSubscriptionClosed
	}
	if s.started && s.next <= b.dropped {
		return Batch{}, nil, ErrSubscriptionLagged
	}
	for i := 0; i < b.n; i++ {
		batch := b.ring[(b.start+i)%len(b.ring)]
		if batch.Index < s.next {
			continue
		}
		s.next, s.started = batch.Index+1, true
		if events := s.filter(batch.Events); len(events) > 0 {
			return Batch{Index: batch.Index, Events: events}, nil, nil
		}
	}
	return Batch{}, b.notify, nil
}

// filter returns the events the subscription wants.
func (s *Subscription) filter(events []Event) []Event {
	var out []Event
	for _, e := range events {
		if s.matches(e) {
			out = append(out, e)
		}
	}
	return out
}

// matches reports whether the subscription wants e.
func (s *Subscription) matches(e Event) bool {
	if e.Namespace != "" && s.req.Namespace != "*" && s.req.Namespace != "" && e.Namespace != s.req.Namespace {
		return false
	}
	if s.req.Allow != nil && !s.req.Allow(e) {
		return false
	}
	if len(s.req.Topics) == 0 {
		return true
	}
	return keyMatches(s.req.Topics[TopicAll], e) || keyMatches(s.req.Topics[e.Topic], e)
}

// keyMatches reports whether any of keys selects e.
func keyMatches(keys []string, e Event) bool {
	for _, k := range keys {
		if k == "*" || k == e.Key {
			return true
		}
		for _, fk := range e.FilterKeys {
			if k == fk {
				return true
			}
		}
	}
	return false
}
