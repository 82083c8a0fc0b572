package nomad

import (
	"context"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// Blocking-query limits, as Nomad has them.
const (
	DefaultQueryWait = 300 * time.Second
	MaxQueryWait     = 300 * time.Second
)

// AllNamespaces is the namespace of a query that spans namespaces.
const AllNamespaces = "*"

// QueryOptions are the explicit options of a read endpoint. The HTTP
// adapter parses them from the request; any other caller fills them in.
type QueryOptions struct {
	// Namespace the read is scoped to ("" is "default"; AllNamespaces
	// spans every namespace the caller may read).
	Namespace string
	// Prefix narrows a list to the IDs (or names) it starts.
	Prefix string
	// MinIndex makes the read a blocking query: it answers once the
	// result's index exceeds MinIndex, or after MaxWait with what it has.
	MinIndex uint64
	// MaxWait bounds a blocking query (0: DefaultQueryWait; at most
	// MaxQueryWait); up to MaxWait/16 of jitter is added, as Nomad does.
	MaxWait time.Duration
	// AllowStale lets a follower answer from its own state. Without it the
	// read needs a leader that has applied every committed entry (see
	// WaitConsistentRead); the HTTP adapter forwards such reads to the
	// leader before they get here.
	AllowStale bool
	// Filter, when set, is the caller's selection (an expression over the
	// API form of each object, evaluated by the adapter): a list keeps the
	// objects it accepts, after authorization and before paging, inside the
	// query, so a failing expression ends the query at once. Each list
	// says what it passes.
	Filter func(obj any) (bool, error)
	// PerPage (0: all), NextToken and Reverse page the lists that page.
	PerPage   int
	NextToken string
	Reverse   bool
	// ACL is the caller's resolved ACL: every endpoint checks its
	// capability against it and filters lists by it. nil means ACLs are
	// disabled (or an internal caller), which allows everything.
	ACL *acl.ACL
	// Identity is who the caller is (its token, or its workload
	// identity's claims), for the reads that answer the caller about
	// itself (its own token, policies, roles); nil is anonymous.
	Identity *Identity
}

// namespace returns the namespace the options name, "default" when none.
func (o *QueryOptions) namespace() string {
	if o.Namespace == "" {
		return structs.DefaultNamespace
	}
	return o.Namespace
}

// QueryMeta describes the answer of a read.
type QueryMeta struct {
	// Index is the raft index the answer is current at, as X-Nomad-Index
	// reports it (0 for a list of tables never written, as Nomad has it).
	Index uint64
	// KnownLeader and LastContact say how fresh the answering server is.
	KnownLeader bool
	LastContact time.Duration
	// NextToken starts the next page of a paged list ("" when none).
	NextToken string
}

// queryFn is the body of a blocking query: it reads from snap (adding what
// it reads to ws) and returns the index its result is current at.
type queryFn func(ws memdb.WatchSet, snap *state.Snapshot) (index uint64, err error)

// blockingQuery runs fn as a read with opts: a consistent read first waits
// until this server is a leader that has applied every committed entry,
// then fn runs, again each time what it read changes, until its index
// exceeds opts.MinIndex or the wait ends (then it answers with what it
// has). meta.Index is at least 1; it is set on errors too.
func (s *Server) blockingQuery(ctx context.Context, opts *QueryOptions, fn queryFn) (QueryMeta, error) {
	if !opts.AllowStale {
		if err := s.WaitConsistentRead(ctx); err != nil {
			return s.refusedMeta(), err
		}
	}
	index, err := runBlockingQuery(ctx, s.State(), opts, fn)
	return s.queryMeta(index), err
}

// runBlockingQuery is the loop of blockingQuery over store.
func runBlockingQuery(ctx context.Context, store *state.StateStore, opts *QueryOptions, fn queryFn) (uint64, error) {
	wait := opts.MaxWait
	if wait <= 0 {
		wait = DefaultQueryWait
	}
	wait = min(wait, MaxQueryWait)
	if opts.MinIndex > 0 {
		wait += rand.N(wait/16 + 1)
	}
	waitCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	_, index, err := store.BlockingQuery(waitCtx, opts.MinIndex, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		index, err := fn(ws, snap)
		return nil, index, err
	})
	if err != nil && waitCtx.Err() != nil && ctx.Err() == nil {
		err = nil // a timeout answers with the current data
	}
	return max(index, 1), err
}

// queryMeta is the meta of an answer at index.
func (s *Server) queryMeta(index uint64) QueryMeta {
	return QueryMeta{Index: index, KnownLeader: s.Leader() != "", LastContact: s.LastContact()}
}

// refusedMeta is the meta of a read refused before it ran: at the store's
// latest index.
func (s *Server) refusedMeta() QueryMeta {
	return s.queryMeta(max(s.State().LatestIndex(), 1))
}

// listIndex turns meta into that of a list read from tables: Nomad answers
// index 0 while none of the tables was ever written.
func (s *Server) listIndex(meta QueryMeta, tables ...string) QueryMeta {
	for _, t := range tables {
		if s.State().Index(t) != 0 {
			return meta
		}
	}
	meta.Index = 0
	return meta
}

// tableIndex returns the newest index among tables, at least 1.
func tableIndex(snap *state.Snapshot, tables ...string) uint64 {
	var idx uint64 = 1
	for _, t := range tables {
		idx = max(idx, snap.Index(t))
	}
	return idx
}

// requireNamespace refuses a caller without cap in ns; for AllNamespaces,
// one without cap in any namespace (the list is then filtered by
// filterByNamespace).
func requireNamespace(a *acl.ACL, ns, cap string) error {
	ok := false
	if ns == AllNamespaces {
		ok = a.AllowNamespaceOperationAnywhere(cap)
	} else {
		ok = a.AllowNamespaceOperation(ns, cap)
	}
	if !ok {
		return structs.ErrPermissionDenied
	}
	return nil
}

// filterByNamespace keeps the objects whose namespace grants cap to a.
func filterByNamespace[T any](a *acl.ACL, cap string, objs []T, nsOf func(T) string) []T {
	if a.IsManagement() {
		return objs
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if a.AllowNamespaceOperation(nsOf(o), cap) {
			out = append(out, o)
		}
	}
	return out
}

// applyFilter keeps the objects opts.Filter accepts (all when it is nil);
// toFilter gives what the filter sees of each.
func applyFilter[T any](opts *QueryOptions, objs []T, toFilter func(T) any) ([]T, error) {
	if opts.Filter == nil {
		return objs, nil
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		ok, err := opts.Filter(toFilter(o))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, o)
		}
	}
	return out, nil
}

// The state store's sentinels, for the adapters' error mapping.
var (
	ErrStateNotFound = state.ErrNotFound
	ErrStateConflict = state.ErrConflict
)

// LatestIndex is the raft index of the newest write the store holds.
func (s *Server) LatestIndex() uint64 { return s.State().LatestIndex() }

// paginate returns the page of items (sorted by key) that starts at
// opts.NextToken and holds at most opts.PerPage items (0: all), and the
// token of the next page ("" when none).
func paginate[T any](opts *QueryOptions, items []T, key func(T) string) ([]T, string) {
	return paginateBy(opts, items, key, func(item T, tok string) bool { return key(item) < tok })
}

// paginateNamespaced is paginate for items sorted by namespace, then ID,
// whose token is "<namespace>.<ID>" (namespaces hold no "."). The token is
// compared as that pair: as one string, "prod-eu.a" would sort before
// "prod.b" and a page would start back in an earlier namespace.
func paginateNamespaced[T any](opts *QueryOptions, items []T, key func(T) (ns, id string)) ([]T, string) {
	joined := func(item T) string {
		ns, id := key(item)
		return ns + "." + id
	}
	return paginateBy(opts, items, joined, func(item T, tok string) bool {
		ns, id := key(item)
		tns, tid, _ := strings.Cut(tok, ".")
		if ns != tns {
			return ns < tns
		}
		return id < tid
	})
}

// paginateBy pages items with key as the token of an item; before reports
// whether an item comes before a token.
func paginateBy[T any](opts *QueryOptions, items []T, key func(T) string, before func(T, string) bool) ([]T, string) {
	start := 0
	if tok := opts.NextToken; tok != "" {
		for start < len(items) && before(items[start], tok) {
			start++
		}
	}
	items = items[start:]
	if opts.PerPage <= 0 || len(items) <= opts.PerPage {
		return items, ""
	}
	return items[:opts.PerPage], key(items[opts.PerPage])
}
