package structs

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"strings"
)

// Service registration messages (the native service catalog).
const (
	// ServiceRegistrationUpsertRequestType carries a
	// ServiceRegistrationUpsertRequest.
	ServiceRegistrationUpsertRequestType MessageType = 102
	// ServiceRegistrationDeleteRequestType carries a
	// ServiceRegistrationDeleteRequest.
	ServiceRegistrationDeleteRequestType MessageType = 103
)

// ServiceProviderNomad is the provider of the native service catalog, the
// one Drover has.
const ServiceProviderNomad = "nomad"

// Service address modes (service address_mode).
const (
	ServiceAddressModeAuto   = "auto"
	ServiceAddressModeHost   = "host"
	ServiceAddressModeAlloc  = "alloc"
	ServiceAddressModeDriver = "driver"
)

// ServiceRegistration is one allocation advertising one service of the
// native catalog (provider "nomad"): the client of the allocation's node
// writes it while the service's task runs, the server removes it when the
// allocation ends, its node goes down or it is collected.
type ServiceRegistration struct {
	// ID is unique per allocation, service and port:
	// "_nomad-task-<alloc>-<task, or group-<group>>-<service>-<port>".
	ID          string
	ServiceName string
	Namespace   string
	NodeID      string
	Datacenter  string
	JobID       string
	AllocID     string
	Tags        []string
	Address     string
	Port        int
	CreateIndex uint64
	ModifyIndex uint64
}

// Copy returns a deep copy of r (nil for nil).
func (r *ServiceRegistration) Copy() *ServiceRegistration {
	if r == nil {
		return nil
	}
	c := *r
	c.Tags = slices.Clone(r.Tags)
	return &c
}

// SameAs reports whether r and o advertise the same thing (indexes aside).
func (r *ServiceRegistration) SameAs(o *ServiceRegistration) bool {
	return r.ID == o.ID && r.ServiceName == o.ServiceName && r.Namespace == o.Namespace &&
		r.NodeID == o.NodeID && r.Datacenter == o.Datacenter && r.JobID == o.JobID &&
		r.AllocID == o.AllocID && slices.Equal(r.Tags, o.Tags) && r.Address == o.Address && r.Port == o.Port
}

// HashWith is the rendezvous weight of r for key: the hex MD5 of the
// allocation ID followed by key. A smaller weight ranks first.
func (r *ServiceRegistration) HashWith(key string) string {
	sum := md5.Sum([]byte(r.AllocID + key))
	return hex.EncodeToString(sum[:])
}

// ServiceRegistrationID is the ID of the registration of service (with
// port label port) by allocation allocID; task is the service's task, ""
// for a group service of group.
func ServiceRegistrationID(allocID, group, task, service, port string) string {
	owner := task
	if owner == "" {
		owner = "group-" + group
	}
	return "_nomad-task-" + allocID + "-" + owner + "-" + service + "-" + port
}

// ErrMalformedChoose is the error of a choose parameter that is not
// "<n>|<key>" with n a positive number and key not empty.
var ErrMalformedChoose = errors.New("failed to parse choose parameter")

// ChooseServices selects, by rendezvous hashing on key, the n registrations
// of regs (sorted by their HashWith(key)) that a caller choosing with
// "<n>|<key>" gets: stable while regs stays the same, and a registration
// that comes or goes moves only its own place. An empty choose returns regs.
func ChooseServices(regs []*ServiceRegistration, choose string) ([]*ServiceRegistration, error) {
	if choose == "" {
		return regs, nil
	}
	nStr, key, ok := strings.Cut(choose, "|")
	if !ok || key == "" {
		return nil, ErrMalformedChoose
	}
	n, err := strconv.Atoi(nStr)
	if err != nil || n < 0 {
		return nil, ErrMalformedChoose
	}
	type ranked struct {
		hash string
		reg  *ServiceRegistration
	}
	rs := make([]ranked, len(regs))
	for i, r := range regs {
		rs[i] = ranked{hash: r.HashWith(key), reg: r}
	}
	slices.SortStableFunc(rs, func(a, b ranked) int { return strings.Compare(a.hash, b.hash) })
	n = min(n, len(rs))
	out := make([]*ServiceRegistration, n)
	for i := range n {
		out[i] = rs[i].reg
	}
	return out, nil
}

// ServiceRegistrationUpsertRequest writes registrations (replacing those
// with the same ID).
type ServiceRegistrationUpsertRequest struct {
	Services []*ServiceRegistration
}

// ServiceRegistrationDeleteRequest deletes registrations by ID (missing
// ones are skipped), and every registration of the allocations AllocIDs.
type ServiceRegistrationDeleteRequest struct {
	IDs      []string
	AllocIDs []string
}
