package client

import (
	"context"
	"time"

	"github.com/drover-project/drover/client/network"
	"github.com/drover-project/drover/nomad/structs"
)

// NetworkConfig is the client's bridge networking: cni_path,
// bridge_network_name, bridge_network_subnet, bridge_network_hairpin_mode.
type NetworkConfig struct {
	CNIPath      []string // default /opt/cni/bin, then /usr/lib/cni
	BridgeName   string   // default "nomad"
	BridgeSubnet string   // default 172.26.64.0/20
	HairpinMode  bool
}

// newNetworkManager returns the client's network manager and whether
// bridge mode works on this host; a host where it cannot gets no manager
// (the node does not advertise bridge mode).
func newNetworkManager(cfg *Config) (*network.Manager, bool, string) {
	m, err := network.NewManager(network.Config{
		Bridge: network.BridgeConfig{
			Name: cfg.Network.BridgeName, Subnet: cfg.Network.BridgeSubnet, HairpinMode: cfg.Network.HairpinMode,
		},
		CNIPath:  cfg.Network.CNIPath,
		StateDir: cfg.DataDir, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, false, err.Error()
	}
	if ok, why := m.Available(); !ok {
		return nil, false, why
	}
	return m, true, ""
}

// nodeNetworks are the network modes the node offers the scheduler: the
// host's network always, bridge mode when it works here.
func nodeNetworks(bridge bool) []*structs.NetworkResource {
	nets := []*structs.NetworkResource{{Mode: "host"}}
	if bridge {
		nets = append(nets, &structs.NetworkResource{Mode: network.ModeBridge})
	}
	return nets
}

// networkModesMeta is the drover.network_modes metadata of a client with
// cfg: "host", and "bridge" too where bridge mode works.
func networkModesMeta(cfg *Config) string {
	if _, ok, _ := newNetworkManager(cfg); ok {
		return "host,bridge"
	}
	return "host"
}

// cleanupNetworks removes the namespaces, veths and iptables rules of
// allocations this client no longer runs (a previous process killed
// before it could tear them down). live are the allocations with a runner.
func (c *Client) cleanupNetworks(live map[string]bool) {
	if c.network == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.network.Cleanup(ctx, live); err != nil {
		c.logger.Warn("failed to remove some networks of gone allocations", "error", err)
	}
}
