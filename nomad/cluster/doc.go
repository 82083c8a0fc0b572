// Package cluster is the server-to-server layer of a Drover server: raft
// replication, cluster formation (bootstrap_expect / retry_join), leadership
// tracking and forwarding of requests to the leader.
//
// It knows nothing about jobs, allocations or the state store. The caller
// (the server wiring in command/agent) hands it a raft.FSM and its full HTTP
// API handler; forwarded requests therefore hit exactly the same endpoints on
// the leader as they would on the follower.
//
// # One RPC port, two protocols
//
// Every server listens on a single TCP "rpc" address. The first byte of each
// inbound connection selects the protocol:
//
//	                     rpc listener (host:4647)
//	                              |
//	                      +-------+-------+
//	                      |      mux      |  reads 1 byte per conn
//	                      +---+-------+---+  (handshake deadline)
//	                0x01      |       |      0x02
//	         +----------------+       +------------------+
//	         v                                           v
//	+-------------------+                 +-------------------------------+
//	| streamLayer       |                 | chanListener -> http.Server   |
//	| (raft.StreamLayer:|                 |   /v1/internal/cluster/self   |
//	|  Accept, Dial)    |                 |   /v1/internal/cluster/join   |
//	|                   |                 |   /v1/internal/cluster/wan    |
//	+--------+----------+                 |   anything else -> caller's   |
//	         |                            |   API handler (Config.Handler)|
//	         v                            +-------------------------------+
//	raft.NetworkTransport
//	         |
//	         v
//	     raft.Raft ---- FSM (caller)
//	         |
//	         +-- <data_dir>/raft/raft.db      boltdb log + stable store
//	         +-- <data_dir>/raft/snapshots/   file snapshots (2 kept)
//
// Outbound, streamLayer.Dial writes 0x01 before handing the conn to raft, and
// the transport of PeerClient writes 0x02, so a plain
// http://<peer-rpc-host:port>/v1/... URL reaches a peer's HTTP handler over
// its rpc port.
//
// # Mutual TLS
//
// With Config.TLS set, every rpc connection is TLS before its protocol
// byte: the mux sees a TLS record (0x16) first, completes the handshake
// with Config.TLS.Server (client certificate required; with
// verify_server_hostname only certificates naming "server.<region>.nomad"
// pass), then reads the protocol byte inside TLS. Outbound, the dialer does
// the handshake with Config.TLS.Client, which checks the peer the same
// way, before writing the byte; raft, join and forwarding all go through
// it, so a client's certificate can neither join raft nor act as a peer.
// Plaintext connections are closed unless UpgradeMode is set.
//
// # Formation
//
// BootstrapExpect == 1 bootstraps a single-voter configuration. With
// BootstrapExpect > 1 every server polls GET /v1/internal/cluster/self on its
// RetryJoin peers and, once it knows BootstrapExpect distinct servers that all
// expect the same number, bootstraps with all of them; every server computes
// the same configuration, which raft tolerates. A server that finds a peer
// with a leader (late joiner, or BootstrapExpect == 0) asks it with
// PUT /v1/internal/cluster/join; the request is forwarded to the leader,
// which calls raft.AddVoter. Servers with existing raft state skip all this.
// All servers of a cluster are expected to list the same RetryJoin set.
//
// # Federation of regions
//
// Each region is its own raft cluster. Every server keeps a membership
// table of the servers of all regions it knows (package wan) and, once per
// GossipInterval, exchanges it with each of them, its raft peers and the
// RetryJoin addresses it has not reached yet (PUT
// /v1/internal/cluster/wan; the reply is the other's table). A join to a
// server of another region is one such exchange: the raft configurations
// stay apart, and both regions learn each other's servers. Whether a
// server answers is each server's own observation: FailAfter failed
// exchanges mark it failed, and a region without an alive server has no
// route. ForwardToRegion proxies a request for another region to one of
// its alive servers, marked with RegionForwardedHeader (such a request is
// never forwarded across regions again); that server forwards it to its
// own leader as any request. Formation (bootstrap_expect) counts servers
// of the own region only.
//
// # Leadership
//
// Leadership changes come from raft.Config.NotifyCh; a goroutine drains it
// (raft blocks on that channel) and queues every transition, in order and
// without loss, for the single consumer of LeaderCh. LeaderCh is closed on
// Shutdown.
//
// Importers: the server wiring (command/agent, nomad/...). This package must
// not import job-level packages.
package cluster
