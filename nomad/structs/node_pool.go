package structs

import (
	"fmt"
	"regexp"
	"time"
)

// Built-in node pools (Nomad's): every node is in "all"; a node or job that
// names no pool is in "default".
const (
	NodePoolAll     = "all"
	NodePoolDefault = "default"
)

// validNodePoolName is Nomad's rule for node pool names.
var validNodePoolName = regexp.MustCompile(`^[a-zA-Z0-9-_]{1,128}$`)

// NodePool is a named set of nodes jobs can be restricted to.
type NodePool struct {
	Name        string
	Description string
	Meta        map[string]string
	// NodeIdentityTTL is recorded and reported (node identities come with
	// their own issue).
	NodeIdentityTTL        time.Duration
	SchedulerConfiguration *NodePoolSchedulerConfiguration
	CreateIndex            uint64
	ModifyIndex            uint64
}

// NodePoolSchedulerConfiguration overrides the cluster's scheduler
// configuration for a pool's nodes.
type NodePoolSchedulerConfiguration struct {
	SchedulerAlgorithm            string
	MemoryOversubscriptionEnabled *bool
}

// BuiltinNodePools returns the two pools every cluster has, as stored at
// index 1.
func BuiltinNodePools() []*NodePool {
	return []*NodePool{
		{Name: NodePoolAll, Description: "Node pool with all nodes in the cluster.", CreateIndex: 1, ModifyIndex: 1},
		{Name: NodePoolDefault, Description: "Default node pool.", CreateIndex: 1, ModifyIndex: 1},
	}
}

// IsBuiltinNodePool reports whether name is "all" or "default".
func IsBuiltinNodePool(name string) bool { return name == NodePoolAll || name == NodePoolDefault }

// Validate checks a pool an operator registers: a valid name, not "all"
// (which cannot change), a known scheduler algorithm.
func (p *NodePool) Validate() error {
	var errs []string
	if !validNodePoolName.MatchString(p.Name) {
		errs = append(errs, fmt.Sprintf("invalid name %q, must match regex %s", p.Name, validNodePoolName))
	}
	if p.Name == NodePoolAll {
		errs = append(errs, fmt.Sprintf("modifying node pool %q is not allowed", NodePoolAll))
	}
	if len(p.Description) > 256 {
		errs = append(errs, "description longer than 256")
	}
	if p.NodeIdentityTTL < 0 {
		errs = append(errs, "node_identity_ttl must not be negative")
	}
	if sc := p.SchedulerConfiguration; sc != nil {
		switch sc.SchedulerAlgorithm {
		case "", SchedulerAlgorithmBinpack, SchedulerAlgorithmSpread:
		default:
			errs = append(errs, fmt.Sprintf("invalid scheduler algorithm %q", sc.SchedulerAlgorithm))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid node pool: %v", joinErrs(errs))
	}
	return nil
}

func joinErrs(errs []string) string {
	out := errs[0]
	for _, e := range errs[1:] {
		out += "; " + e
	}
	return out
}

// Node pool raft messages (explicit values in the operator's range 90-99).
const (
	NodePoolUpsertRequestType MessageType = 92
	NodePoolDeleteRequestType MessageType = 93
)

// NodePoolUpsertRequest creates or updates node pools.
type NodePoolUpsertRequest struct {
	NodePools []*NodePool
}

// NodePoolDeleteRequest deletes node pools by name.
type NodePoolDeleteRequest struct {
	Names []string
}
