// Package periodic is the leader's periodic dispatcher: it launches a child
// job of every enabled periodic job at each time the job's cron
// expressions match.
//
// Layers, as elsewhere in the server:
//
//   - Decide (decide.go) is pure: from a job's periodic block, the time
//     launches are counted from (the later of its latest recorded launch
//     and the submit time of its current version), whether a child still
//     runs, and now, it returns the launch that is due (the latest match
//     in (since, now], so a leader that was away launches a missed time
//     once, not once per missed time), whether prohibit_overlap skips it,
//     and the next match after now.
//   - Dispatcher (dispatcher.go) is the goroutine: it waits for the
//     earliest next launch or a change of the jobs or launch tables, reads
//     state, calls Decide per job and carries the result out through
//     Backend.Launch.
//
// The launch record of every periodic job (structs.PeriodicLaunch) is in
// raft, written in the same entry as the child job and its evaluation, and
// the child's ID is derived from the launch time
// ("<parent>/periodic-<unix seconds>"). A new leader therefore neither
// launches a time again nor skips one.
//
// Importers: package nomad (leader wiring).
package periodic
