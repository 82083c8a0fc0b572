// Package imagegc garbage-collects the Docker images a client pulled, under
// leases (docs/semantics.md, "Prefetch before kill"): the client never removes an
// image used by a running allocation, a prepared replacement, or the
// previous version of an unfinished deployment; other images it used go
// after the driver's image_delay.
//
// The decision is pure: Reconcile folds the current lease set into the
// known images (an image that loses its last lease records when), and Plan
// returns the known images to remove now and when to look again. Only
// known images — those this client leased at some point — are candidates:
// several clients may share one Docker engine, and each collects only the
// images it leased itself.
//
// Collector is the goroutine around them. It waits for a lease change
// (SetLeases) or Plan's wake time (on an injectable Clock), reconciles,
// persists the known images through a Persister (so a restarted client
// remembers what it leased and since when) and removes through an
// ImageStore. A removal that fails — in use by a container, say — keeps the
// image known and is retried after Config.RetryInterval; an image found
// gone is forgotten. Before its first SetLeases a collector removes
// nothing.
//
// Image lifecycle:
//
//	(unknown) ──leased──► known, leased ──last lease lost──► known, unleased since T
//	                          ▲                                   │
//	                          └────────── leased again ───────────┤
//	                                                              │ now ≥ T + Delay (and ≥ RetryAt)
//	                       RemoveImage fails: RetryAt = now + RetryInterval ◄─┤
//	                                                              ▼
//	                                          RemoveImage ok or not found: forgotten
//
// Known limit: a lease taken while RemoveImage is in flight cannot stop it;
// Docker refuses to remove an image a container uses, which covers every
// started task, and the client recomputes leases on every task state change,
// which keeps the remaining window (an image pulled again but not yet in a
// container) short.
//
// Importers: the client agent (package client). It imports go-hclog only.
package imagegc
