package config

import (
	"slices"
	"sort"

	"github.com/hashicorp/hcl/v2"
)

// Nomad's agent configuration has many keys Drover does not act on (Vault,
// Consul, TLS, telemetry, garbage-collection tuning, ...). A file written for
// Nomad must still load, so those keys are accepted and reported in
// Config.Ignored (the agent logs each once as a warning); a key that is not
// Nomad's stays an error, so typos are still caught.
//
// nomadOnly lists them per block, by the block's path from the root ("" is
// the root). Blocks listed here are accepted whole: their content is not
// looked at. Labelled blocks carry their label count.
type nomadOnlyKeys struct {
	attrs  []string
	blocks []nomadOnlyBlock
}

type nomadOnlyBlock struct {
	name   string
	labels int
}

var nomadOnly = map[string]nomadOnlyKeys{
	"": {
		attrs: []string{
			"disable_update_check", "disable_anonymous_signature", "enable_debug",
			"enable_syslog", "syslog_facility", "leave_on_interrupt", "leave_on_terminate",
			"log_json", "log_file", "log_rotate_bytes", "log_rotate_duration",
			"log_rotate_max_files", "log_include_location", "plugin_dir",
		},
		blocks: []nomadOnlyBlock{
			{name: "addresses"}, {name: "audit"}, {name: "autopilot"},
			{name: "consul"}, {name: "http_api_response_headers"},
			{name: "keyring", labels: 1}, {name: "limits"}, {name: "reporting"},
			{name: "sentinel"}, {name: "telemetry"}, {name: "ui"},
			{name: "vault"},
		},
	},
	"acl": {attrs: []string{
		"token_ttl", "policy_ttl", "role_ttl", "replication_token",
	}},
	"tls":       {attrs: []string{"tls_prefer_server_cipher_suites"}},
	"advertise": {attrs: []string{"serf"}},
	"server": {
		attrs: []string{
			"authoritative_region", "data_dir", "enabled_schedulers", "enable_event_broker",
			"encrypt", "eval_gc_threshold", "batch_eval_gc_threshold", "deployment_gc_threshold",
			"job_gc_interval", "job_gc_threshold", "node_gc_threshold",
			"acl_token_gc_threshold", "csi_volume_claim_gc_interval",
			"csi_volume_claim_gc_threshold", "csi_plugin_gc_threshold",
			"root_key_gc_interval", "root_key_gc_threshold", "root_key_rotation_threshold",
			"max_heartbeats_per_second", "failover_heartbeat_ttl", "num_schedulers",
			"license_path", "license_env", "raft_multiplier", "raft_protocol",
			"raft_snapshot_threshold", "raft_snapshot_interval", "raft_trailing_logs",
			"redundancy_zone", "rejoin_after_leave", "retry_interval", "retry_max",
			"start_join", "non_voting_server", "upgrade_version", "event_buffer_size",
			"job_max_priority", "job_default_priority", "job_max_source_size",
			"job_tracked_versions", "deployment_query_rate_limit", "oidc_issuer",
			"start_timeout", "node_identity_ttl",
		},
		blocks: []nomadOnlyBlock{
			{name: "default_scheduler_config"}, {name: "plan_rejection_tracker"},
			{name: "raft_boltdb"}, {name: "raft_logstore"}, {name: "search"},
		},
	},
	"client.template": {
		attrs: []string{"max_stale", "block_query_wait"},
		blocks: []nomadOnlyBlock{
			{name: "wait"}, {name: "wait_bounds"}, {name: "consul_retry"},
			{name: "vault_retry"}, {name: "nomad_retry"},
		},
	},
	"server.server_join": {attrs: []string{"retry_interval", "retry_max", "start_join"}},
	"client.artifact":    {attrs: []string{"filesystem_isolation_extra_paths"}},
	"client": {
		attrs: []string{
			"alloc_dir", "alloc_mounts_dir", "state_dir", "cni_path", "cni_config_dir",
			"bridge_network_name", "bridge_network_subnet", "bridge_network_subnet_ipv6",
			"bridge_network_hairpin_mode", "cpu_total_compute", "cpu_disable_dmidecode",
			"memory_total_mb", "disk_total_mb", "disk_free_mb", "disable_remote_exec",
			"gc_interval", "gc_max_allocs", "gc_disk_usage_threshold",
			"gc_inode_usage_threshold", "gc_parallel_destroys", "gc_volumes_on_node_gc",
			"max_kill_timeout", "network_interface", "network_speed", "node_max_allocs",
			"reservable_cores", "nomad_service_discovery", "preferred_address_family",
			"cgroup_parent", "no_host_uuid", "common_plugin_dir",
		},
		blocks: []nomadOnlyBlock{
			{name: "reserved"}, {name: "server_join"},
			{name: "drain_on_shutdown"}, {name: "users"},
		},
	},
}

// withNomadOnly returns schema extended by the Nomad-only keys of the block
// at path that schema does not already decode.
func withNomadOnly(schema *hcl.BodySchema, path string) *hcl.BodySchema {
	extra, ok := nomadOnly[path]
	if !ok {
		return schema
	}
	out := &hcl.BodySchema{
		Attributes: slices.Clone(schema.Attributes),
		Blocks:     slices.Clone(schema.Blocks),
	}
	for _, a := range extra.attrs {
		if hasBlock(extra.blocks, a) || decodes(schema, a) {
			continue // written either way in Nomad's docs, the block form wins; or acted on
		}
		out.Attributes = append(out.Attributes, hcl.AttributeSchema{Name: a})
	}
	for _, b := range extra.blocks {
		if decodes(schema, b.name) {
			continue
		}
		h := hcl.BlockHeaderSchema{Type: b.name}
		for i := 0; i < b.labels; i++ {
			h.LabelNames = append(h.LabelNames, "name")
		}
		out.Blocks = append(out.Blocks, h)
	}
	return out
}

func hasBlock(blocks []nomadOnlyBlock, name string) bool {
	for _, b := range blocks {
		if b.name == name {
			return true
		}
	}
	return false
}

// decodes reports whether schema (the keys Drover acts on) has an
// attribute or block named name.
func decodes(schema *hcl.BodySchema, name string) bool {
	for _, a := range schema.Attributes {
		if a.Name == name {
			return true
		}
	}
	for _, b := range schema.Blocks {
		if b.Type == name {
			return true
		}
	}
	return false
}

// noteNomadOnly appends to c.Ignored the Nomad-only keys content sets in
// the block at path, as "path.key" (or "key" at the root), but for those
// schema (the keys Drover acts on) decodes.
func noteNomadOnly(c *Config, content *hcl.BodyContent, path string, schema *hcl.BodySchema) {
	extra, ok := nomadOnly[path]
	if !ok {
		return
	}
	prefix := ""
	if path != "" {
		prefix = path + "."
	}
	var found []string
	for _, a := range extra.attrs {
		if _, set := content.Attributes[a]; set && !decodes(schema, a) {
			found = append(found, prefix+a)
		}
	}
	for _, b := range content.Blocks {
		if hasBlock(extra.blocks, b.Type) && !decodes(schema, b.Type) && !slices.Contains(found, prefix+b.Type) {
			found = append(found, prefix+b.Type)
		}
	}
	sort.Strings(found)
	for _, k := range found {
		if !slices.Contains(c.Ignored, k) {
			c.Ignored = append(c.Ignored, k)
		}
	}
}
