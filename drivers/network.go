package drivers

// NetworkIsolation is an allocation's own network namespace (a group in
// network mode "bridge"): every task of the allocation runs in it.
type NetworkIsolation struct {
	// Path is the namespace's file, a bind mount of it named by the
	// allocation's ID; raw_exec and exec tasks enter it (setns) before
	// they start.
	Path string
	// Labels are details the driver that created the namespace needs
	// again (see NetworkCreator); nil when the client created it.
	Labels map[string]string
	// Hostname is the group's host name ("" keeps the driver's default)
	// and ResolvConf the path of the group's resolv.conf ("" keeps the
	// host's), for drivers that give tasks their own UTS and mount
	// namespaces (exec); Docker tasks get both from the pause container.
	Hostname   string `json:",omitempty"`
	ResolvConf string `json:",omitempty"`
}

// Copy returns a deep copy of n.
func (n *NetworkIsolation) Copy() *NetworkIsolation {
	if n == nil {
		return nil
	}
	c := *n
	if n.Labels != nil {
		c.Labels = make(map[string]string, len(n.Labels))
		for k, v := range n.Labels {
			c.Labels[k] = v
		}
	}
	return &c
}

// DNSConfig is the resolv.conf of an allocation's namespace (the group
// network's dns block).
type DNSConfig struct {
	Servers  []string
	Searches []string
	Options  []string
}

// NetworkCreateRequest asks a NetworkCreator for an allocation's
// namespace.
type NetworkCreateRequest struct {
	AllocID  string
	Hostname string     // the namespace's host name; "" leaves the driver's default
	DNS      *DNSConfig // nil: the host's resolv.conf
}

// NetworkCreator is implemented by drivers whose tasks can only join a
// namespace the driver made (Docker: one owned by a pause container, which
// the task containers join). The client asks the first such driver of a
// group for the allocation's namespace, then sets it up with CNI.
type NetworkCreator interface {
	// CreateNetwork returns the allocation's namespace: Path is a path
	// of the namespace (/proc/<pid>/ns/net), Labels what DestroyNetwork
	// and the tasks need. It is idempotent: created is false when the
	// namespace already existed (a restarted client reattaching).
	CreateNetwork(req *NetworkCreateRequest) (iso *NetworkIsolation, created bool, err error)
	// DestroyNetwork removes what CreateNetwork made; a missing one is
	// no error.
	DestroyNetwork(allocID string, iso *NetworkIsolation) error
}
