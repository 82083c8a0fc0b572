package agent

import (
	"net/http"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// The docker keys real job files use pass the server's driver config
// check; a key of Nomad's docker driver that Drover does not carry out is
// a 400 naming it and saying so, before anything is written.
func TestContractDockerKeysOnTheServer(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client

	legacy := testJob("legacy")
	task := legacy.TaskGroups[0].Tasks[0]
	task.Driver = "docker"
	task.Config = map[string]any{
		"image": "redis:7", "pin_digest": false,
		"port_map":           []map[string]any{{"db": 6379}},
		"auth_soft_fail":     true,
		"hostname":           "cache",
		"dns_servers":        []string{"10.0.0.2"},
		"dns_search_domains": []string{"service.consul"},
		"dns_options":        []string{"ndots:2"},
		"extra_hosts":        []string{"db.internal:10.0.0.3"},
		"mounts":             []map[string]any{{"type": "tmpfs", "target": "/scratch"}},
		"logging":            []map[string]any{{"type": "json-file", "config": []map[string]any{{"max-size": "10m", "max-file": 3}}}},
		"sysctl":             []map[string]any{{"net.core.somaxconn": "16384"}},
		"ulimit":             []map[string]any{{"nofile": "2048:4096"}},
		"shm_size":           67108864, "init": true, "readonly_rootfs": true,
		"memory_hard_limit": 256, "cpu_hard_limit": true, "cpu_cfs_period": 50000,
		"interactive": true, "tty": true, "privileged": true,
	}
	res, _, err := c.Jobs().Validate(legacy, nil)
	require.NoError(t, err)
	require.Empty(t, res.Error)
	require.True(t, res.DriverConfigValidated)

	unsupported := testJob("unsupported")
	task = unsupported.TaskGroups[0].Tasks[0]
	task.Driver = "docker"
	task.Config = map[string]any{"image": "redis:7", "pin_digest": false, "ipv4_address": "10.0.0.9",
		"mount": []map[string]any{{"type": "volume", "source": "v", "target": "/v", "volume_options": map[string]any{"driver_config": map[string]any{"name": "pxd"}}}}}
	const why = `task "server": config: ipv4_address is not supported by Drover's docker driver yet: user-defined Docker networks are not managed by Drover`
	res, _, err = c.Jobs().Validate(unsupported, nil)
	require.NoError(t, err)
	require.Contains(t, res.Error, why)
	require.Contains(t, res.Error, `mount[0].volume_options.driver_config is not supported by Drover's docker driver yet`)
	_, _, err = c.Jobs().Register(unsupported, nil)
	requireStatus(t, err, http.StatusBadRequest, "ipv4_address is not supported by Drover's docker driver yet")
	_, _, err = c.Jobs().Info("unsupported", nil)
	require.Error(t, err, "nothing was written")
}

// TestContractDockerMemoryHardLimitBelowMemory: a memory_hard_limit below
// the task's memory, which the task's start would refuse, is refused at
// registration naming the field; one at or above it is accepted, and an
// interpolated one is the node's to check.
func TestContractDockerMemoryHardLimitBelowMemory(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	job := testJob("hardlimit")
	task := job.TaskGroups[0].Tasks[0]
	task.Driver = "docker"
	task.Resources = &api.Resources{CPU: new(100), MemoryMB: new(256)}
	task.Config = map[string]any{"image": "redis:7", "pin_digest": false, "memory_hard_limit": 128}
	_, _, err := c.Jobs().Register(job, nil)
	requireStatus(t, err, http.StatusBadRequest, `task "server": config: memory_hard_limit (128 MB) must not be less than the task's memory (256 MB)`)
	_, _, err = c.Jobs().Info("hardlimit", nil)
	require.Error(t, err, "nothing was written")

	for _, ok := range []any{256, 512, "${meta.hard}"} {
		task.Config["memory_hard_limit"] = ok
		res, _, err := c.Jobs().Validate(job, nil)
		require.NoError(t, err)
		require.Empty(t, res.Error, "memory_hard_limit = %v", ok)
	}
}
