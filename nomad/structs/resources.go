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
	ReservedPorts []Port // static ports
	DynamicPorts  []Port // ports assigned by the scheduler (Value filled in allocations)
	MBits         int
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
}
