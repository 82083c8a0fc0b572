package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParse_ScaleSettings(t *testing.T) {
	c, err := Parse("a.hcl", []byte(`
enable_debug = true
server {
  enabled = true
  eval_gc_threshold = "2h"
  job_gc_threshold = "30m"
  deployment_gc_threshold = "90m"
  node_gc_threshold = "48h"
  max_heartbeats_per_second = 100
}`))
	require.NoError(t, err)
	require.True(t, c.EnableDebug)
	require.Equal(t, 2*time.Hour, c.Server.EvalGCThreshold)
	require.Equal(t, 30*time.Minute, c.Server.JobGCThreshold)
	require.Equal(t, 90*time.Minute, c.Server.DeploymentGCThreshold)
	require.Equal(t, 48*time.Hour, c.Server.NodeGCThreshold)
	require.Equal(t, 100.0, c.Server.MaxHeartbeatsPerSecond)

	merged := DefaultConfig().Merge(c)
	require.Equal(t, 30*time.Minute, merged.Server.JobGCThreshold)
	require.True(t, merged.EnableDebug)

	for src, want := range map[string]string{
		`server { eval_gc_threshold = "soon" }`:    "eval_gc_threshold",
		`server { max_heartbeats_per_second = 0 }`: "max_heartbeats_per_second",
		`server { node_gc_threshold = "-1h" }`:     "node_gc_threshold",
	} {
		_, err := Parse("a.hcl", []byte(src))
		require.Error(t, err, src)
		require.Contains(t, err.Error(), want, src)
	}
}
