package structs

import "time"

// Node is a client machine that runs allocations.
type Node struct {
	ID                string
	SecretID          string // authenticates the node's client agent; never sent to API readers
	Datacenter        string
	Name              string
	HTTPAddr          string
	Attributes        map[string]string
	Meta              map[string]string
	NodeClass         string
	NodePool          string
	NodeResources     NodeResources
	ReservedResources NodeReservedResources
	Drivers           map[string]*DriverInfo
	// HostVolumes are the host volumes the node offers, by name.
	HostVolumes map[string]*ClientHostVolumeConfig
	// HostNetworks are the client's host_network blocks, by name, as
	// configured; the addresses they resolved to are in
	// NodeResources.NodeNetworks.
	HostNetworks map[string]*ClientHostNetworkConfig
	Drain        bool
	// DrainStrategy is set while the node drains (Drain is then true);
	// LastDrain describes the newest drain, finished or not.
	DrainStrategy         *DrainStrategy
	LastDrain             *DrainMetadata
	SchedulingEligibility string
	Status                string
	StatusDescription     string
	StatusUpdatedAt       int64 // unix seconds
	Events                []*NodeEvent
	CreateIndex           uint64
	ModifyIndex           uint64
}

// Ready reports whether the node may receive new placements: status ready,
// eligible and not draining.
func (n *Node) Ready() bool {
	return n.Status == NodeStatusReady && n.SchedulingEligibility == NodeSchedulingEligible && !n.Drain
}

// Copy returns a copy whose maps and slices may be replaced freely.
func (n *Node) Copy() *Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Events = append([]*NodeEvent(nil), n.Events...)
	return &c
}

// DrainSpec is what an operator asks of a drain. Deadline is how long the
// drain may take: when it passes, every allocation still on the node stops
// at once (0: no deadline; negative: force, the deadline is now).
// IgnoreSystemJobs leaves system and sysbatch allocations running.
type DrainSpec struct {
	Deadline         time.Duration
	IgnoreSystemJobs bool
}

// DrainStrategy is a drain in progress.
type DrainStrategy struct {
	DrainSpec
	// ForceDeadline is when the drain's spec was set plus Deadline (that
	// moment for a forced drain; zero without a deadline).
	ForceDeadline time.Time
	StartedAt     time.Time
}

// DeadlinePassed reports whether ds has a deadline and it is not after now.
func (ds *DrainStrategy) DeadlinePassed(now time.Time) bool {
	return ds != nil && !ds.ForceDeadline.IsZero() && !now.Before(ds.ForceDeadline)
}

// Node events of a drain (Nomad's wording).
const (
	NodeEventSubsystemDrain = "Drain"
	NodeEventDrainSet       = "Node drain strategy set"
	NodeEventDrainDisabled  = "Node drain disabled"
	NodeEventDrainComplete  = "Node drain complete"
)

// Drain statuses of DrainMetadata (Nomad's strings).
const (
	DrainStatusDraining = "draining"
	DrainStatusComplete = "complete"
	DrainStatusCanceled = "canceled"
)

// DrainMetadata records a node's newest drain.
type DrainMetadata struct {
	StartedAt  time.Time
	UpdatedAt  time.Time
	Status     string
	AccessorID string
	Meta       map[string]string
}

// The dynamic port range of a node whose configuration sets none (Nomad's).
const (
	DefaultMinDynamicPort = 20000
	DefaultMaxDynamicPort = 32000
)

// NodeResources is what a node offers.
type NodeResources struct {
	Cpu      NodeCpuResources
	Memory   NodeMemoryResources
	Disk     NodeDiskResources
	Networks []*NetworkResource
	// NodeNetworks are the addresses of the node's host networks, each
	// under its network's name (host_network.go).
	NodeNetworks   []*NodeNetworkResource
	MinDynamicPort int
	MaxDynamicPort int
}

// NodeCpuResources is a node's CPU.
type NodeCpuResources struct {
	CpuShares     int64
	TotalCpuCores uint16
}

// NodeMemoryResources is a node's memory.
type NodeMemoryResources struct{ MemoryMB int64 }

// NodeDiskResources is a node's disk.
type NodeDiskResources struct{ DiskMB int64 }

// NodeReservedResources is what a node keeps for itself.
type NodeReservedResources struct {
	Cpu      NodeReservedCpuResources
	Memory   NodeReservedMemoryResources
	Disk     NodeReservedDiskResources
	Networks NodeReservedNetworkResources
}

// NodeReservedCpuResources is reserved CPU.
type NodeReservedCpuResources struct{ CpuShares int64 }

// NodeReservedMemoryResources is reserved memory.
type NodeReservedMemoryResources struct{ MemoryMB int64 }

// NodeReservedDiskResources is reserved disk.
type NodeReservedDiskResources struct{ DiskMB int64 }

// NodeReservedNetworkResources lists reserved host ports ("22,80,8000-8100").
type NodeReservedNetworkResources struct{ ReservedHostPorts string }

// DriverInfo is a driver's fingerprint on a node.
type DriverInfo struct {
	Attributes        map[string]string
	Detected          bool
	Healthy           bool
	HealthDescription string
	UpdateTime        time.Time
}

// NodeEvent is one entry of a node's event history.
type NodeEvent struct {
	Message     string
	Subsystem   string
	Details     map[string]string
	Timestamp   time.Time
	CreateIndex uint64
}
