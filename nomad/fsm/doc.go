// Package fsm is Drover's raft finite state machine: it applies committed
// raft log entries to a *state.StateStore, snapshots the store, and
// restores it from snapshots.
//
// Every log entry is a structs.MessageType byte followed by the
// msgpack-encoded request (structs.Encode). Apply dispatches on the type to
// one applyX per message type; each applyX decodes the request and calls
// the state store's write methods at the entry's raft index. A type the FSM
// does not know is skipped when it carries structs.IgnoreUnknownTypeFlag and
// is fatal otherwise (the log is corrupt or from a newer server). Decoding
// failures panic for the same reason. A rejected write (for example
// promoting a terminal deployment) is returned as an error value, which raft
// hands to the proposer as ApplyFuture.Response().
//
// Snapshot format: a msgpack header, then records of (record type, object)
// for every table, then an end record. Allocations are written without their
// Job; the state store re-links them on restore.
//
// Who may import it: the server (nomad/...), which wires it into raft and
// sets the evals hook to feed the eval broker. Nobody else writes state.
package fsm
