// Package tlsutil is Drover's TLS toolbox, in two halves:
//
//   - generate.go builds a self-signed certificate authority and the
//     certificates of agents and operators signed by it, with the names
//     Nomad gives them: a server's certificate carries the DNS name
//     "server.<region>.nomad", a client's "client.<region>.nomad", the CLI's
//     "cli.<region>.nomad". These names are the agents' roles: a peer on the
//     rpc port is a server only if its certificate says so. Generation is
//     pure: it takes `now` and returns PEM bytes; `drover tls` writes them.
//   - config.go turns the agent's `tls {}` settings into *tls.Config values
//     for each listener and each outbound connection, with the verification
//     rules (chain to the CA, and the role name when verify_server_hostname
//     is on), and holds the agent's key pair so that Reload (SIGHUP) takes
//     effect on the next handshake without restarting anything.
//
// It imports nothing of Drover's; the agent wiring (command/agent and its
// config) and the CLI (command) import it. The server-to-server layer
// (nomad/cluster) receives the *tls.Config values it builds.
package tlsutil
