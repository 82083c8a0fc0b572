package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

// Defaults of the client's CNI settings, as in Nomad; /usr/lib/cni is
// where Debian's containernetworking-plugins puts the plugins.
var DefaultCNIPath = []string{"/opt/cni/bin", "/usr/lib/cni"}

// DefaultCNIConfigDir is where cni/<name> networks are configured.
const DefaultCNIConfigDir = "/opt/cni/config"

// Config configures a Manager.
type Config struct {
	Bridge BridgeConfig
	// CNIPath lists the directories searched for plugin binaries
	// (cni_path, colon-separated in the agent's config).
	CNIPath []string
	// CNIConfigDir holds the configurations of cni/<name> networks
	// (cni_config_dir: .conflist, .conf and .json files).
	CNIConfigDir string
	// StateDir holds the namespaces (<StateDir>/netns/<alloc ID>) and
	// libcni's cache of what was added (<StateDir>/cni): the client's
	// data dir, so that two clients on one host never touch each other's.
	StateDir string
	Logger   hclog.Logger
}

// Manager sets up and removes allocations' namespaces. It is safe for
// concurrent use.
type Manager struct {
	cfg    Config
	cni    *libcni.CNIConfig
	list   *libcni.NetworkConfigList
	logger hclog.Logger
	mu     sync.Mutex // serializes CNI calls: the plugins lock their own state, iptables does not always
}

// NewManager checks cfg and returns a Manager; it touches nothing.
func NewManager(cfg Config) (*Manager, error) {
	cfg.Bridge = cfg.Bridge.WithDefaults()
	if len(cfg.CNIPath) == 0 {
		cfg.CNIPath = DefaultCNIPath
	}
	if cfg.CNIConfigDir == "" {
		cfg.CNIConfigDir = DefaultCNIConfigDir
	}
	if cfg.StateDir == "" {
		return nil, errors.New("network: StateDir is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	raw, err := Conflist(cfg.Bridge)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	list, err := libcni.ConfListFromBytes(raw)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	return &Manager{
		cfg:    cfg,
		cni:    libcni.NewCNIConfigWithCacheDir(cfg.CNIPath, filepath.Join(cfg.StateDir, "cni"), nil),
		list:   list,
		logger: cfg.Logger.Named("network"),
	}, nil
}

// NetnsPath is the path of an allocation's namespace.
func (m *Manager) NetnsPath(allocID string) string {
	return filepath.Join(m.cfg.StateDir, "netns", allocID)
}

// Available reports whether bridge mode can work on this host: running as
// root, the plugins found in the CNI path, the kernel's bridge support
// present and iptables installed. reason says what is missing.
func (m *Manager) Available() (ok bool, reason string) {
	if os.Geteuid() != 0 {
		return false, "the client does not run as root"
	}
	for _, p := range RequiredPlugins {
		if _, err := invoke.FindInPath(p, m.cfg.CNIPath); err != nil {
			return false, fmt.Sprintf("CNI plugin %q not found in %s", p, strings.Join(m.cfg.CNIPath, ":"))
		}
	}
	if !kernelBridge() {
		return false, "the kernel has no bridge support (module bridge)"
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return false, "iptables is not installed"
	}
	return true, ""
}

// kernelBridge reports whether the bridge module is loaded or can be:
// built in or loadable from the running kernel's module tree.
func kernelBridge() bool {
	if _, err := os.Stat("/sys/module/bridge"); err == nil {
		return true
	}
	var u struct{ release string }
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		u.release = strings.TrimSpace(string(b))
	}
	if u.release == "" {
		return false
	}
	dir := filepath.Join("/lib/modules", u.release)
	if b, err := os.ReadFile(filepath.Join(dir, "modules.builtin")); err == nil && strings.Contains(string(b), "/bridge.ko") {
		return true
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "kernel/net/bridge/bridge.ko*"))
	return len(matches) > 0
}

// Status is the outcome of Setup.
type Status struct {
	Isolation *drivers.NetworkIsolation
	Network   *structs.AllocNetworkStatus // the allocation's address in the namespace
}

// Setup makes alloc's namespace and attaches it to the bridge, returning
// its path and address. A namespace already there (a restarted client)
// is reattached: its cached CNI result is reused, nothing is rebuilt. With
// creator (a driver that owns the namespace, Docker's pause container),
// the namespace is the creator's, bound on the allocation's path.
func (m *Manager) Setup(ctx context.Context, alloc *structs.Allocation, spec *Spec, creator drivers.NetworkCreator) (*Status, error) {
	list, err := m.listFor(spec.Mode)
	if err != nil {
		return nil, err
	}
	if spec.Mode == ModeBridge {
		if ok, why := m.Available(); !ok {
			return nil, fmt.Errorf("network: bridge mode is not available on this client: %s", why)
		}
	}
	path := m.NetnsPath(alloc.ID)
	iso := &drivers.NetworkIsolation{Path: path, Hostname: spec.Hostname}
	fresh := false // the namespace is made (or bound) by this call
	if rc := ResolvConf(spec.DNS); rc != "" {
		iso.ResolvConf = m.resolvPath(alloc.ID)
		if err := writeResolvConf(iso.ResolvConf, rc); err != nil {
			return nil, err
		}
	}
	if creator != nil {
		req := &drivers.NetworkCreateRequest{AllocID: alloc.ID, Hostname: spec.Hostname, DNS: driverDNS(spec.DNS)}
		owned, created, err := creator.CreateNetwork(req)
		if err != nil {
			return nil, fmt.Errorf("network: creating the allocation's namespace: %w", err)
		}
		iso.Labels = owned.Labels
		if created && isNetns(path) {
			// The owner was recreated: the bound namespace is stale.
			if err := deleteNetns(path); err != nil {
				return nil, err
			}
		}
		if !isNetns(path) {
			_ = os.Remove(path)
			if err := adoptNetns(owned.Path, path); err != nil {
				_ = creator.DestroyNetwork(alloc.ID, owned)
				return nil, err
			}
			fresh = true
		}
	} else if !isNetns(path) {
		_ = os.Remove(path) // a file left unmounted by a crash
		if err := createNetns(path); err != nil {
			return nil, err
		}
		fresh = true
	}
	if fresh && m.cached(alloc.ID) {
		// A new namespace: what the cache says was added went with the
		// old one; delete it (its rules, its address) before adding anew.
		if err := m.delCNI(ctx, alloc.ID, path); err != nil {
			m.logger.Warn("removing what a previous namespace of the allocation left", "alloc_id", alloc.ID, "error", err)
		}
	}
	rt := m.runtimeConf(alloc.ID, path, spec.Ports)
	rt.Args = spec.CNIArgs
	m.mu.Lock()
	defer m.mu.Unlock()
	res, err := m.cni.GetNetworkListCachedResult(list, rt)
	if err == nil && res != nil && !fresh {
		m.logger.Debug("reattached to the allocation's namespace", "alloc_id", alloc.ID)
	} else {
		res, err = m.cni.AddNetworkList(ctx, list, rt)
		if err != nil {
			_ = m.cni.DelNetworkList(context.WithoutCancel(ctx), list, rt)
			return nil, fmt.Errorf("network: CNI ADD on network %s: %w", list.Name, err)
		}
	}
	ns, err := networkStatus(res)
	if err != nil {
		return nil, err
	}
	return &Status{Isolation: iso, Network: ns}, nil
}

// Teardown detaches alloc's namespace (CNI DEL: its veth, address and
// iptables rules go), deletes it and has creator remove its owner. Every
// step runs even when an earlier one failed; the errors are joined.
func (m *Manager) Teardown(ctx context.Context, allocID string, creator drivers.NetworkCreator, iso *drivers.NetworkIsolation) error {
	path := m.NetnsPath(allocID)
	errs := []error{m.delCNI(ctx, allocID, path)}
	errs = append(errs, deleteNetns(path), m.removeResolvConf(allocID))
	if creator != nil {
		if iso == nil {
			iso = &drivers.NetworkIsolation{Path: path}
		}
		errs = append(errs, creator.DestroyNetwork(allocID, iso))
	}
	return errors.Join(errs...)
}

// delCNI runs CNI DEL for every network allocID was added to, with the
// configuration and arguments it was added with (libcni's cache); without
// a cached attachment but with a namespace, DEL on the bridge network.
func (m *Manager) delCNI(ctx context.Context, allocID, path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	atts, err := m.cni.GetCachedAttachments(allocID)
	if err != nil {
		return fmt.Errorf("network: reading the CNI cache of %s: %w", allocID, err)
	}
	if len(atts) == 0 {
		if !isNetns(path) {
			return nil // nothing was added: no cached attachment, no namespace
		}
		if err := m.cni.DelNetworkList(ctx, m.list, m.runtimeConf(allocID, path, nil)); err != nil {
			return fmt.Errorf("network: CNI DEL of %s: %w", allocID, err)
		}
		return sweepRules(allocID)
	}
	var errs []error
	for _, a := range atts {
		list, err := libcni.ConfListFromBytes(a.Config)
		if err != nil {
			errs = append(errs, fmt.Errorf("network: the cached configuration of %s: %w", allocID, err))
			continue
		}
		rt := &libcni.RuntimeConf{ContainerID: a.ContainerID, NetNS: a.NetNS, IfName: a.IfName, Args: a.CniArgs, CapabilityArgs: a.CapabilityArgs}
		if err := m.cni.DelNetworkList(ctx, list, rt); err != nil {
			errs = append(errs, fmt.Errorf("network: CNI DEL of %s on %s: %w", allocID, a.Network, err))
		}
	}
	if len(errs) == 0 {
		errs = append(errs, sweepRules(allocID))
	}
	return errors.Join(errs...)
}

// Cleanup removes what allocations not live on this client left: cached
// attachments (CNI DEL with their cached configuration, which drops their
// veths, addresses and iptables rules), namespaces and what creators made
// for them (Docker's pause containers). A client killed
// before it could tear them down calls it once it has restored its
// allocations.
func (m *Manager) Cleanup(ctx context.Context, live map[string]bool, creators []drivers.NetworkCreator) error {
	var errs []error
	m.mu.Lock()
	cached, err := m.cni.GetCachedAttachments("")
	m.mu.Unlock()
	if err != nil {
		errs = append(errs, err)
	}
	var atts []Attachment
	for _, a := range cached {
		atts = append(atts, Attachment{AllocID: a.ContainerID, NetNS: a.NetNS})
	}
	entries, _ := os.ReadDir(filepath.Join(m.cfg.StateDir, "netns"))
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	for _, a := range Orphans(atts, files, live) {
		m.logger.Info("removing the network of an allocation this client no longer runs", "alloc_id", a.AllocID)
		if a.Attached {
			errs = append(errs, m.delCNI(ctx, a.AllocID, a.NetNS))
		}
		errs = append(errs, deleteNetns(m.NetnsPath(a.AllocID)), m.removeResolvConf(a.AllocID))
		for _, c := range creators {
			errs = append(errs, c.DestroyNetwork(a.AllocID, nil))
		}
	}
	return errors.Join(errs...)
}

// listFor returns the configuration list of a group network mode: the
// client's own bridge, or cni/<name> from CNIConfigDir.
func (m *Manager) listFor(mode string) (*libcni.NetworkConfigList, error) {
	if mode == ModeBridge {
		return m.list, nil
	}
	name, ok := strings.CutPrefix(mode, ModeCNIPrefix)
	if !ok || name == "" {
		return nil, fmt.Errorf("network: mode %q is not one this client sets up", mode)
	}
	list, err := libcni.LoadConfList(m.cfg.CNIConfigDir, name)
	if err != nil {
		return nil, fmt.Errorf("network: CNI network %q in %s: %w", name, m.cfg.CNIConfigDir, err)
	}
	return list, nil
}

// CNINetworks lists the networks of CNIConfigDir whose plugins are all
// in the CNI path, by name, sorted: the node offers mode "cni/<name>" for
// each. Files that do not parse are left out.
func (m *Manager) CNINetworks() []string {
	files, err := libcni.ConfFiles(m.cfg.CNIConfigDir, []string{".conf", ".conflist", ".json"})
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var names []string
	for _, f := range files {
		var list *libcni.NetworkConfigList
		if strings.HasSuffix(f, ".conflist") {
			list, err = libcni.ConfListFromFile(f)
		} else {
			var c *libcni.PluginConfig
			if c, err = libcni.ConfFromFile(f); err == nil {
				list, err = libcni.ConfListFromConf(c)
			}
		}
		if err != nil || list.Name == "" || seen[list.Name] || !m.pluginsFound(list) {
			continue
		}
		seen[list.Name] = true
		names = append(names, list.Name)
	}
	sort.Strings(names)
	return names
}

func (m *Manager) pluginsFound(list *libcni.NetworkConfigList) bool {
	for _, p := range list.Plugins {
		if _, err := invoke.FindInPath(p.Network.Type, m.cfg.CNIPath); err != nil {
			return false
		}
	}
	return len(list.Plugins) > 0
}

// cached reports whether libcni's cache holds an attachment of allocID.
func (m *Manager) cached(allocID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	atts, err := m.cni.GetCachedAttachments(allocID)
	return err == nil && len(atts) > 0
}

// resolvPath is the path of an allocation's resolv.conf (its dns block).
func (m *Manager) resolvPath(allocID string) string {
	return filepath.Join(m.cfg.StateDir, "resolv", allocID+".conf")
}

func writeResolvConf(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("network: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return fmt.Errorf("network: writing resolv.conf: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("network: writing resolv.conf: %w", err)
	}
	return nil
}

func (m *Manager) removeResolvConf(allocID string) error {
	if err := os.Remove(m.resolvPath(allocID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("network: %w", err)
	}
	return nil
}

func (m *Manager) runtimeConf(allocID, path string, ports []PortMapping) *libcni.RuntimeConf {
	rt := &libcni.RuntimeConf{ContainerID: allocID, NetNS: path, IfName: IfName}
	if len(ports) > 0 {
		rt.CapabilityArgs = map[string]any{"portMappings": ports}
	}
	return rt
}

// networkStatus is the allocation's address: the first IPv4 address of
// the result on the interface in the namespace.
func networkStatus(res types.Result) (*structs.AllocNetworkStatus, error) {
	r, err := types100.NewResultFromResult(res)
	if err != nil {
		return nil, fmt.Errorf("network: reading the CNI result: %w", err)
	}
	ns := &structs.AllocNetworkStatus{InterfaceName: IfName}
	for _, ip := range r.IPs {
		if ip.Address.IP == nil {
			continue
		}
		if ip.Address.IP.To4() != nil && ns.Address == "" {
			ns.Address = ip.Address.IP.String()
		} else if ip.Address.IP.To4() == nil && ns.AddressIPv6 == "" {
			ns.AddressIPv6 = ip.Address.IP.String()
		}
	}
	if net.ParseIP(ns.Address) == nil {
		return nil, errors.New("network: the CNI result has no IPv4 address")
	}
	return ns, nil
}

func driverDNS(d *structs.DNSConfig) *drivers.DNSConfig {
	if d == nil {
		return nil
	}
	return &drivers.DNSConfig{Servers: d.Servers, Searches: d.Searches, Options: d.Options}
}
