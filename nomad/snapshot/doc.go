// Package snapshot is the archive format of `operator snapshot save` and
// `restore`: a gzip-compressed tar holding meta.json (the raft snapshot
// metadata), state.bin (the FSM's snapshot stream) and SHA256SUMS (the
// SHA-256 of both, checked before anything is restored).
//
// Who may import it: the server (nomad), the agent's snapshot endpoints
// (command/agent) and tools that inspect archives.
// It imports only hashicorp/raft.
package snapshot
