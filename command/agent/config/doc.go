// Package config holds the agent configuration of `drover agent`: its
// defaults, the `-dev` preset, the Nomad-style HCL (or JSON) configuration
// files, the command-line flags, and their validation.
//
// The accepted file syntax follows Nomad's agent configuration for the
// subset Drover implements:
//
//	name       = "node-1"
//	data_dir   = "/var/lib/drover"
//	bind_addr  = "0.0.0.0"
//	datacenter = "dc1"
//	region     = "global"
//	log_level  = "INFO"
//
//	ports {
//	  http = 4646
//	  rpc  = 4647 # raft and server-to-server forwarding
//	}
//
//	advertise { # optional; "host" or "host:port"
//	  http = "10.0.0.5"
//	  rpc  = "10.0.0.5:4647"
//	}
//
//	server {
//	  enabled          = true
//	  bootstrap_expect = 3
//	  server_join {
//	    retry_join = ["10.0.0.6:4647", "10.0.0.7:4647"]
//	  }
//	}
//
//	client {
//	  enabled    = true
//	  servers    = ["10.0.0.5:4646"] # servers' HTTP addresses
//	  node_class = "edge"
//	  node_pool  = "default"
//	  meta {
//	    rack = "r1"
//	  }
//	  options {
//	    "driver.raw_exec.enable" = "1"
//	  }
//	}
//
//	plugin "raw_exec" {
//	  config {
//	    enabled = true
//	  }
//	}
//
// Unknown arguments and blocks are errors reported as "file:line:col".
// Keys of Nomad's agent configuration that Drover does not act on (vault,
// consul, telemetry, tls.tls_prefer_server_cipher_suites, advertise.serf, server.raft_protocol, ... see
// nomad_keys.go) are accepted and listed in Config.Ignored; the agent logs
// each once as a warning. A file whose content is a JSON object, whatever
// its name, uses HCL's JSON syntax for the same structure.
// `meta` and `options` may be written as blocks (quoted keys allowed, as in
// Nomad) or as map attributes. A plugin's `config` body is opaque and is
// handed to the driver as a map[string]any (see PluginConfig).
//
// Precedence, as in Nomad: DefaultConfig (or DevConfig with -dev), then each
// -config file or directory in the order given, then the flags. See
// LoadFromArgs. Then, as in Nomad, bind_addr and advertise.http/rpc given
// as go-sockaddr templates are resolved against the host's interfaces
// (ResolveAddrTemplates, helper/sockaddrtmpl), each to exactly one
// address; a client host_network's interface template is left to the
// client, which resolves it when it fingerprints the host.
//
// Only command/agent and its tests should import this package; the rest of
// the code base receives the values it needs from the agent wiring.
package config
