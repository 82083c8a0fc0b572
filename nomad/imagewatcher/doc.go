// Package imagewatcher is the leader's image auto-updater: it follows the
// tags of Docker tasks configured with `auto_update = true` (or "notify")
// and, when a tag moves to a new digest that passes the task's gates
// (Gate, gate.go: auto_update_soak, auto_update_min_age, notify never,
// auto_update_approval, auto_update_window), registers a new job version
// pinning that digest. A digest held for an operator (notify, approval)
// is recorded once in the task's ImageWatch (Held), which is the
// ImageUpdate event; approvals (ImageWatch.Approved) are committed by the
// server's approve endpoint through raft and survive leader changes. The version goes through the normal
// register path, so it rolls out through the group's update block
// (canaries, health-gated waves, auto_promote, auto_revert) like any other.
//
// Layers, as elsewhere in the server:
//
//   - Decide (decide.go) is pure: from the targets (auto-updated tasks of
//     current job versions, targets.go), the check and watch records (in
//     raft), in-memory pacing (Memory) and now, it returns the checks to
//     send, the jobs to roll, what to record and when to wake. One check
//     per distinct (reference, credential) per interval — the shortest
//     interval of the tasks that share it — plus jitter (under 10% of the
//     interval); at most Memory.Budget checks per registry per minute; a
//     registry that answered 429 is left alone for its Retry-After (one
//     minute without one). A roll needs the last check to have succeeded,
//     so a registry that is down changes nothing.
//   - Watcher (watcher.go) is the driver goroutine: it waits (next wake,
//     a change of jobs or deployments, a CheckNow), reads state, calls
//     Decide and carries it out through Backend (raft writes and
//     JobRegister with the job's modify index enforced, so a concurrent
//     change by a person or pipeline is never overwritten: the next pass
//     decides again on the new version).
//
// Checks of a tag come from the watcher and from every registration and
// plan that resolves it (they are observations folded into the record in
// raft, never overwritten by an older answer). Only the watcher's own
// check starts a soak, and a job whose version was pinned after the
// record's last check is never rolled from that record: the next check
// decides.
//
// Bad digests: a digest a task ran in a job version whose deployment
// failed, when that version changed the digest, is recorded as bad for the
// image reference (ImageBadDigest, table image_bad_digests) and rolled to
// no job on that reference until an operator clears it (`drover job
// image-updates -clear-bad`); a failure after the clear marks it again. A
// later digest of the tag rolls as usual. With auto_revert, the revert
// copies the previous version, pinned digest included.
//
// Unpinned versions: a registration whose registry could not be reached
// stores the tag. Drover does not learn which digest the nodes pulled, so
// the first good check after that version is taken as what they run
// (ImageWatch.Assumed) and is not rolled; a later move of the tag rolls a
// pinned version after the soak.
//
// Every version the watcher registers carries a VersionTag (name
// "image-update-<digest prefix>", description naming the task, the tag,
// the old and the new digest), which `job history` shows.
//
// State: ImageCheck (per reference and credential: last check, its error,
// the tag's digest and since when), ImageWatch (per task: assumed digest,
// last roll) and ImageBadDigest (per reference and digest) live in raft
// (nomad/state tables image_checks, image_watches and image_bad_digests,
// raft message ImageWatchUpdateRequestType), so a new
// leader continues where the old one stopped. The budget window and
// Retry-After holds are in memory and restart with each leadership term.
//
// Importers: package nomad (leader wiring, endpoints). The status it
// reports is structs.ImageTaskStatus; the body the HTTP layer answers with
// is wire.ImageUpdates.
package imagewatcher
