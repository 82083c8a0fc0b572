package agent

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/command/agent/config"
	"github.com/drover-project/drover/wire"
)

// testAgent is an in-process dev-mode server agent on ephemeral ports with a
// nomad/api client pointed at it.
type testAgent struct {
	*Agent
	client *api.Client
}

// newTestAgent starts a single-server agent whose data dir lives in dataDir
// ("" for a fresh temporary one) and waits until it leads.
func newTestAgent(t *testing.T, dataDir string) *testAgent {
	t.Helper()
	return newTestAgentWith(t, func(cfg *config.Config) {
		if dataDir != "" {
			cfg.DataDir = dataDir
		}
	})
}

// newTestAgentWith is newTestAgent with the configuration changed by edit.
func newTestAgentWith(t *testing.T, edit func(*config.Config)) *testAgent {
	t.Helper()
	cfg := config.DevConfig()
	cfg.Name = fmt.Sprintf("test-%d", time.Now().UnixNano())
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	cfg.Client.Enabled = false
	cfg.DataDir = t.TempDir()
	edit(cfg)
	logger := hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: os.Stderr})
	a, err := NewAgent(cfg, logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Shutdown() })
	client, err := api.NewClient(&api.Config{Address: "http://" + a.HTTPAddr()})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return a.Server().IsLeader() }, 10*time.Second, 20*time.Millisecond)
	return &testAgent{Agent: a, client: client}
}

// registerNode registers a ready node with room for a few allocations and
// returns its ID.
func (ta *testAgent) registerNode(t *testing.T, name string) string {
	t.Helper()
	id, _ := ta.registerNodeWithSecret(t, name)
	return id
}

// registerNodeWithSecret is registerNode that also returns the node's
// secret, which its internal endpoints require.
func (ta *testAgent) registerNodeWithSecret(t *testing.T, name string) (id, secret string) {
	t.Helper()
	id, secret = uuid.NewString(), uuid.NewString()
	node := &api.Node{
		ID: id, Name: name, Datacenter: "dc1", NodePool: "default", Status: "ready",
		SchedulingEligibility: "eligible",
		Attributes:            map[string]string{"kernel.name": "linux", "os.name": "debian"},
		NodeResources: &api.NodeResources{
			Cpu:    api.NodeCpuResources{CpuShares: 4000, TotalCpuCores: 4},
			Memory: api.NodeMemoryResources{MemoryMB: 8192},
			Disk:   api.NodeDiskResources{DiskMB: 100000},
		},
		ReservedResources: &api.NodeReservedResources{},
		Drivers:           map[string]*api.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
	}
	var out wire.NodeRegisterResponse
	_, err := ta.client.Raw().Write("/v1/internal/node/register", &wire.NodeRegisterRequest{Node: node, SecretID: secret}, &out, nil)
	require.NoError(t, err)
	return id, secret
}
