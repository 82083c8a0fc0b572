// Package taskapi is the client's task API, as Nomad's: every task gets a
// unix socket, <task dir>/secrets/api.sock (NOMAD_UNIX_ADDR), that serves
// the local agent's HTTP API to the task without TLS or a reachable agent
// address.
//
// The socket always requires credentials, ACLs on or off: a request
// without a token (X-Nomad-Token, or "Authorization: Bearer") is refused
// with 403, so the anonymous policy is never reachable through it. With
// ACLs on, the agent's API resolves the token (an ACL token, or a
// workload identity JWT) and authorizes each endpoint as usual. With ACLs
// off, the agent does not check tokens, so the socket does: it accepts
// the workload identities the servers signed for this client's
// allocations (Config.KnownIdentity).
//
// The socket is bound through the secrets dir's file descriptor, opened
// after pathguard.Within resolved it inside the task dir: a symlink a task
// planted as secrets/ or api.sock never makes the client bind, or remove,
// a file elsewhere, and deep data dirs do not hit the 108-byte limit of
// socket paths. Close removes the socket.
//
// Importers: client and client/allocrunner. It imports helper/pathguard
// and the standard library.
package taskapi
