package client

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/client/fingerprint"
	"github.com/drover-project/drover/client/network"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/helper/sockaddrtmpl"
	"github.com/drover-project/drover/nomad/structs"
)

// NetworkConfig is the client's bridge networking: cni_path,
// bridge_network_name, bridge_network_subnet, bridge_network_hairpin_mode.
type NetworkConfig struct {
	CNIPath      []string // default /opt/cni/bin, then /usr/lib/cni
	CNIConfigDir string   // cni/<name> networks; default /opt/cni/config
	BridgeName   string   // default "nomad"
	BridgeSubnet string   // default 172.26.64.0/20
	HairpinMode  bool
}

// networkOffer is what the client's network manager can set up here.
type networkOffer struct {
	bridge    bool     // bridge mode works
	bridgeWhy string   // why not
	cni       []string // cni/<name> networks found in cni_config_dir
}

// newNetworkManager returns the client's network manager and what it
// offers; a client that is not root gets none (it can make no namespace).
func newNetworkManager(cfg *Config) (*network.Manager, networkOffer) {
	m, err := network.NewManager(network.Config{
		Bridge: network.BridgeConfig{
			Name: cfg.Network.BridgeName, Subnet: cfg.Network.BridgeSubnet, HairpinMode: cfg.Network.HairpinMode,
		},
		CNIPath: cfg.Network.CNIPath, CNIConfigDir: cfg.Network.CNIConfigDir,
		StateDir: cfg.DataDir, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, networkOffer{bridgeWhy: err.Error()}
	}
	var offer networkOffer
	offer.bridge, offer.bridgeWhy = m.Available()
	if os.Geteuid() != 0 {
		return nil, offer
	}
	offer.cni = m.CNINetworks()
	return m, offer
}

// modes are the group network modes of offer: "host" always, "bridge"
// when it works here, "cni/<name>" for each network found.
func (o networkOffer) modes() []string {
	modes := []string{"host"}
	if o.bridge {
		modes = append(modes, network.ModeBridge)
	}
	for _, n := range o.cni {
		modes = append(modes, network.ModeCNIPrefix+n)
	}
	return modes
}

// nodeNetworks are the network modes the node offers the scheduler.
func nodeNetworks(o networkOffer) []*structs.NetworkResource {
	var nets []*structs.NetworkResource
	for _, m := range o.modes() {
		nets = append(nets, &structs.NetworkResource{Mode: m})
	}
	return nets
}

// networkModesMeta is the drover.network_modes metadata of a client with
// cfg: its network modes, comma-separated ("host,bridge").
func networkModesMeta(cfg *Config) string {
	_, offer := newNetworkManager(cfg)
	return strings.Join(offer.modes(), ",")
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
	var creators []drivers.NetworkCreator
	for _, name := range c.drivers.Names() {
		if nc, ok := c.drivers[name].(drivers.NetworkCreator); ok {
			creators = append(creators, nc)
		}
	}
	if err := c.network.Cleanup(ctx, live, creators); err != nil {
		c.logger.Warn("failed to remove some networks of gone allocations", "error", err)
	}
}

// resolveHostNetworks resolves the client's host networks to addresses of
// this host (fingerprint.HostNetworks); a network that resolves to none is
// not offered, and a warning says why. An interface given as a go-sockaddr
// template is resolved first (fingerprint.ResolveInterfaceTemplates); one
// that does not resolve to exactly one interface is the error, naming the
// field, and the client does not start.
func resolveHostNetworks(cfg map[string]*structs.ClientHostNetworkConfig, logger hclog.Logger) ([]*structs.NodeNetworkResource, error) {
	if len(cfg) == 0 {
		return nil, nil
	}
	if fingerprint.HasInterfaceTemplate(cfg) {
		addrs, err := sockaddrtmpl.HostAddrs()
		if err != nil {
			return nil, fmt.Errorf("client.host_network: listing the interface addresses for a go-sockaddr template: %w", err)
		}
		if cfg, err = fingerprint.ResolveInterfaceTemplates(cfg, addrs); err != nil {
			return nil, err
		}
	}
	ifaces, err := fingerprint.Interfaces()
	if err != nil {
		logger.Warn("cannot list the network interfaces: no host network is offered", "error", err)
		return nil, nil
	}
	nets, unresolved := fingerprint.HostNetworks(cfg, ifaces)
	for _, name := range slices.Sorted(maps.Keys(unresolved)) {
		logger.Warn("host network has no address on this host and is not offered", "host_network", name, "reason", unresolved[name])
	}
	return nets, nil
}

// copyHostNetworks returns a copy of the configured host networks, each
// with its Name set.
func copyHostNetworks(in map[string]*structs.ClientHostNetworkConfig) map[string]*structs.ClientHostNetworkConfig {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]*structs.ClientHostNetworkConfig, len(in))
	for name, hn := range in {
		c := *hn
		c.Name = name
		out[name] = &c
	}
	return out
}
