package structs

import "time"

// Resources a task asks for.
type Resources struct {
	CPU         int
	Cores       int
	MemoryMB    int
	MemoryMaxMB int
	DiskMB      int
	Networks    []*NetworkResource
}

// NetworkResource is a group or task network request, or (in an allocation)
// the ports actually assigned.
type NetworkResource struct {
	Mode          string
	Device        string
	CIDR          string
	IP            string
	Hostname      string
	DNS           *DNSConfig // bridge and cni modes: the group's resolv.conf; nil keeps the host's
	CNI           *CNIConfig // cni/<name> mode: the arguments passed to the plugins
	ReservedPorts []Port     // static ports
	DynamicPorts  []Port     // ports assigned by the scheduler (Value filled in allocations)
	MBits         int
}

// DNSConfig is a group network's dns block.
type DNSConfig struct {
	Servers  []string
	Searches []string
	Options  []string
}

// CNIConfig is a group network's cni block.
type CNIConfig struct {
	Args map[string]string
}

// Port is a labelled port. Value is the host port; To the port inside the task.
type Port struct {
	Label       string
	Value       int
	To          int
	HostNetwork string
}

// AllocatedResources is what the scheduler granted an allocation.
type AllocatedResources struct {
	Tasks  map[string]*AllocatedTaskResources
	Shared AllocatedSharedResources
}

// AllocatedTaskResources is what one task was granted.
type AllocatedTaskResources struct {
	Cpu      AllocatedCpuResources
	Memory   AllocatedMemoryResources
	Networks []*NetworkResource
}

// AllocatedCpuResources is CPU in MHz shares.
type AllocatedCpuResources struct {
	CpuShares int64
}

// AllocatedMemoryResources is memory in MB.
type AllocatedMemoryResources struct {
	MemoryMB    int64
	MemoryMaxMB int64
}

// AllocatedSharedResources is what the group shares: disk and group networks.
type AllocatedSharedResources struct {
	DiskMB   int64
	Networks []*NetworkResource
	Ports    []AllocatedPortMapping
}

// AllocatedPortMapping is one assigned group port.
type AllocatedPortMapping struct {
	Label  string
	Value  int
	To     int
	HostIP string
}

// Service is a service registration (Nomad-native provider).
type Service struct {
	Name        string
	TaskName    string
	PortLabel   string
	AddressMode string
	Address     string
	Provider    string
	Tags        []string
	CanaryTags  []string
	Checks      []ServiceCheck
	Meta        map[string]string
	OnUpdate    string
	// CheckRestart applies to every check of the service; a check's own
	// block overrides it field by field.
	CheckRestart *CheckRestart
}

// ServiceCheck is a health check of a service.
type ServiceCheck struct {
	Name          string
	Type          string // http, tcp, script
	Command       string
	Args          []string
	Path          string
	Protocol      string
	PortLabel     string
	AddressMode   string
	Interval      time.Duration
	Timeout       time.Duration
	InitialStatus string
	Method        string
	Header        map[string][]string
	Body          string
	TaskName      string
	OnUpdate      string
	CheckRestart  *CheckRestart // restart the task when the check stays unhealthy; or nil
}

// CheckRestart restarts a task whose check is unhealthy Limit times in a
// row (Nomad's check_restart block). The restart goes through the task's
// restart policy.
type CheckRestart struct {
	Limit          int           // consecutive unhealthy results; 0 disables
	Grace          time.Duration // results this long after the task (re)started do not count
	IgnoreWarnings bool          // a warning counts as passing
}

// Merge returns c with the set fields of o (a check's own block) over it;
// nil when both are nil.
func (c *CheckRestart) Merge(o *CheckRestart) *CheckRestart {
	switch {
	case c == nil && o == nil:
		return nil
	case c == nil:
		m := *o
		return &m
	}
	m := *c
	if o == nil {
		return &m
	}
	if o.Limit > 0 {
		m.Limit = o.Limit
	}
	if o.Grace > 0 {
		m.Grace = o.Grace
	}
	if o.IgnoreWarnings {
		m.IgnoreWarnings = true
	}
	return &m
}
