package client

import (
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/client/allocrunner/taskenv"
	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/nomad/structs"
)

// The native service catalog, the client's side: what each allocation
// advertises is decided from its latest state (serviceRegistrations) and
// sent to the servers by serviceLoop (services_sync.go), which retries
// until the servers hold exactly that.

// serviceRegistrations is what allocation a (with its client state) on node
// advertises in the native catalog, sorted by ID: a task's services while
// that task runs, the group's services while one of its tasks runs, and
// nothing once the server wants the allocation stopped (services go first,
// before the tasks are killed). Services of another provider are not the
// catalog's. Names, tags and addresses are interpolated with the task's
// (for group services the group's) environment; canary_tags replace tags
// while the allocation is a canary. The address and port are the port
// label's host IP and host port (address_mode auto or host) or the port
// the task listens on (alloc); a numeric label is that port on the node's
// address; a service without a port advertises the node's address and 0.
func serviceRegistrations(a *structs.Allocation, node *structs.Node) []*api.ServiceRegistration {
	if a == nil || a.Job == nil || a.DesiredStatus != structs.AllocDesiredStatusRun {
		return nil
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return nil
	}
	running := func(task string) bool {
		st := a.TaskStates[task]
		return st != nil && st.State == taskrunner.StateRunning
	}
	canary := a.DeploymentStatus != nil && a.DeploymentStatus.Canary
	var out []*api.ServiceRegistration
	add := func(env *taskenv.Env, task string, s *structs.Service) {
		if s == nil || (s.Provider != "" && s.Provider != structs.ServiceProviderNomad) {
			return
		}
		out = append(out, registrationFor(a, node, env, task, s, canary))
	}
	anyRunning := false
	for _, t := range tg.Tasks {
		anyRunning = anyRunning || running(t.Name)
	}
	if anyRunning {
		env := taskenv.Build(taskenv.Input{Alloc: a, Node: node})
		for _, s := range tg.Services {
			add(env, "", s)
		}
	}
	for _, t := range tg.Tasks {
		if !running(t.Name) || len(t.Services) == 0 {
			continue
		}
		env := taskenv.Build(taskenv.Input{Alloc: a, Task: t, Node: node})
		for _, s := range t.Services {
			add(env, t.Name, s)
		}
	}
	slices.SortFunc(out, func(x, y *api.ServiceRegistration) int { return strings.Compare(x.ID, y.ID) })
	return out
}

// definesServices reports whether a's group defines services of the
// native catalog (its own or its tasks').
func definesServices(a *structs.Allocation) bool {
	if a == nil || a.Job == nil {
		return false
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return false
	}
	native := func(ss []*structs.Service) bool {
		for _, s := range ss {
			if s != nil && (s.Provider == "" || s.Provider == structs.ServiceProviderNomad) {
				return true
			}
		}
		return false
	}
	if native(tg.Services) {
		return true
	}
	for _, t := range tg.Tasks {
		if native(t.Services) {
			return true
		}
	}
	return false
}

// registrationFor is the registration of service s of task (or of the
// group when task is "").
func registrationFor(a *structs.Allocation, node *structs.Node, env *taskenv.Env, task string, s *structs.Service, canary bool) *api.ServiceRegistration {
	name := env.Replace(s.Name)
	tags := s.Tags
	if canary && len(s.CanaryTags) > 0 {
		tags = s.CanaryTags
	}
	nodeIP := "127.0.0.1"
	if node != nil && node.Attributes[taskenv.NodeIPAttribute] != "" {
		nodeIP = node.Attributes[taskenv.NodeIPAttribute]
	}
	addr, port := serviceAddress(a, s.PortLabel, s.AddressMode, nodeIP)
	if s.Address != "" {
		addr = env.Replace(s.Address)
	}
	reg := &api.ServiceRegistration{
		ID:          structs.ServiceRegistrationID(a.ID, a.TaskGroup, task, name, s.PortLabel),
		ServiceName: name, Namespace: a.Namespace, JobID: a.JobID, AllocID: a.ID,
		Tags: env.ReplaceSlice(tags), Address: addr, Port: port,
	}
	if node != nil {
		reg.NodeID, reg.Datacenter = node.ID, node.Datacenter
	}
	return reg
}

// serviceAddress resolves a service's port label in mode (see
// serviceRegistrations).
func serviceAddress(a *structs.Allocation, label, mode, nodeIP string) (string, int) {
	if label == "" {
		return nodeIP, 0
	}
	if a.AllocatedResources != nil {
		for _, p := range a.AllocatedResources.Shared.Ports {
			if p.Label != label {
				continue
			}
			ip := p.HostIP
			if ip == "" {
				ip = nodeIP
			}
			if mode == structs.ServiceAddressModeAlloc && p.To > 0 {
				return ip, p.To
			}
			return ip, p.Value
		}
	}
	if n, err := strconv.Atoi(label); err == nil && n > 0 && n < 65536 {
		return nodeIP, n
	}
	return nodeIP, 0
}

// sameRegistrations reports whether two sorted lists advertise the same.
func sameRegistrations(x, y []*api.ServiceRegistration) bool {
	if len(x) == 0 && len(y) == 0 {
		return true
	}
	return reflect.DeepEqual(x, y)
}
