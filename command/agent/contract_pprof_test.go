package agent

import (
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/command/agent/config"
)

// TestContractPprof: the agent's profiles through the api client need
// enable_debug while ACLs are off; a CPU profile, a trace and a named
// profile come back; an unknown profile is a 404 and another server a 500.
func TestContractPprof(t *testing.T) {
	ta := newTestAgent(t, "")
	_, err := ta.client.Agent().Lookup("heap", api.PprofOptions{}, nil)
	require.ErrorContains(t, err, "403", "ACLs off and no enable_debug")

	ta = newTestAgentWith(t, func(cfg *config.Config) { cfg.EnableDebug = true })
	a := ta.client.Agent()
	cpu, err := a.CPUProfile(api.PprofOptions{Seconds: 1}, nil)
	require.NoError(t, err)
	require.NotEmpty(t, cpu)
	tr, err := a.Trace(api.PprofOptions{Seconds: 1}, nil)
	require.NoError(t, err)
	require.NotEmpty(t, tr)
	heap, err := a.Lookup("heap", api.PprofOptions{GC: 1}, nil)
	require.NoError(t, err)
	require.NotEmpty(t, heap)
	goroutines, err := a.Lookup("goroutine", api.PprofOptions{Debug: 1}, nil)
	require.NoError(t, err)
	require.Contains(t, string(goroutines), "goroutine profile:")

	_, err = a.Lookup("invalid", api.PprofOptions{}, nil)
	require.ErrorContains(t, err, "Unexpected response code: 404")
	_, err = a.CPUProfile(api.PprofOptions{Seconds: 1, ServerID: "unknown.global"}, nil)
	require.ErrorContains(t, err, "500 (unknown Nomad server unknown.global)")
	_, err = a.CPUProfile(api.PprofOptions{Seconds: 9999}, nil)
	require.ErrorContains(t, err, "400")
}
