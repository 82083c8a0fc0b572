// Package nomad is Drover's server: it wires raft (nomad/cluster), the FSM and
// state store (nomad/fsm, nomad/state), and the leader's duties — the eval
// broker (nomad/broker), scheduler workers (scheduler) and the plan queue and
// applier (nomad/planner) — and offers the endpoints the HTTP layer calls.
//
// Every endpoint authorizes its caller itself, so that it is safe to call
// without the HTTP layer in front: a read takes QueryOptions with the
// caller's resolved ACL, a write takes the ACL (caller *acl.ACL, or an ACL
// field of its arguments), and nil means ACLs are disabled or the caller is
// the server itself (see acl_write.go). A refusal is
// structs.ErrPermissionDenied, before anything is read or written.
//
// Endpoint methods that write must run on the leader; the HTTP layer forwards
// writes that reach a follower (Server.Forward) before calling them. A
// default read is consistent: a follower forwards it to the leader, which
// answers once it has applied every committed entry (WaitConsistentRead);
// with ?stale any server answers from its own state store. The road of a
// request and the import rules are in docs/architecture.md.
//
// Leadership lifecycle:
//
//	follower ──elected──▶ establishLeadership: barrier, enable broker and
//	   ▲                   plan queue, re-enqueue pending evals, start workers
//	   └──lost leadership── revokeLeadership: stop workers, disable both
//
// Imported by command/agent only.
package nomad
