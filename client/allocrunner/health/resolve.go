package health

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"strings"

	"github.com/drover-project/drover/client/allocrunner/taskenv"
	"github.com/drover-project/drover/nomad/structs"
)

// ProviderNomad is the service provider whose checks the client runs
// (also assumed when a service names none).
const ProviderNomad = "nomad"

// ResolveChecks returns the Nomad-native checks of the allocation's group
// services and task services (provider "nomad" or unset; Consul services
// are skipped), in definition order, with addresses resolved from the
// allocation's group ports: host NOMAD_IP_<label> (the port's host IP, else
// the node's address, else 127.0.0.1) and port NOMAD_HOST_PORT_<label>, as
// the task environment has them. A numeric port label is a port on that
// host. Paths and headers are interpolated with the task environment.
// Script checks run in the check's task (a group service names it with
// task, on the check or the service) with the command and args
// interpolated with that task's environment; they need no port. Every
// check carries its check_restart merged with its service's. skipped names
// the checks left out (unsupported types). A check whose port or task
// cannot be resolved is kept with Err set: it always fails.
func ResolveChecks(a *structs.Allocation, node *structs.Node) (checks []CheckDef, skipped []string) {
	if a == nil || a.Job == nil {
		return nil, nil
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return nil, nil
	}
	groupEnv := taskenv.Build(taskenv.Input{Alloc: a, Node: node})
	r := resolver{alloc: a, group: tg.Name, nodeIP: "127.0.0.1", taskEnvs: map[string]*taskenv.Env{}}
	for _, t := range tg.Tasks {
		r.taskEnvs[t.Name] = taskenv.Build(taskenv.Input{Alloc: a, Task: t, Node: node})
	}
	if node != nil && node.Attributes[taskenv.NodeIPAttribute] != "" {
		r.nodeIP = node.Attributes[taskenv.NodeIPAttribute]
	}
	for _, s := range tg.Services {
		r.service(groupEnv, "", s)
	}
	for _, t := range tg.Tasks {
		for _, s := range t.Services {
			r.service(r.taskEnvs[t.Name], t.Name, s)
		}
	}
	return r.checks, r.skipped
}

type resolver struct {
	alloc    *structs.Allocation
	group    string
	nodeIP   string                  // for numeric port labels
	taskEnvs map[string]*taskenv.Env // by task name
	checks   []CheckDef
	skipped  []string
}

func (r *resolver) service(env *taskenv.Env, task string, s *structs.Service) {
	if s == nil || (s.Provider != "" && s.Provider != ProviderNomad) {
		return
	}
	serviceTask := task
	for i, sc := range s.Checks {
		task := s.CheckTask(sc, serviceTask)
		name := sc.Name
		if name == "" {
			name = fmt.Sprintf("service: %q check", s.Name)
		}
		if sc.Type != CheckHTTP && sc.Type != CheckTCP && sc.Type != CheckScript {
			r.skipped = append(r.skipped, fmt.Sprintf("check %q of service %q: type %q is not supported", name, s.Name, sc.Type))
			continue
		}
		def := CheckDef{
			ID:       checkID(r.alloc.ID, r.group, task, s.Name, name, strconv.Itoa(i)),
			Name:     name,
			Group:    r.group,
			Task:     task,
			Service:  env.Replace(s.Name),
			Mode:     ModeHealthiness,
			Type:     sc.Type,
			Protocol: sc.Protocol,
			Method:   sc.Method,
			Path:     env.Replace(sc.Path),
			Header:   replaceHeader(env, sc.Header),
			Body:     sc.Body,
			Interval: sc.Interval,
			Timeout:  sc.Timeout,

			InitialPassed:  sc.InitialStatus == "passing",
			IgnoreWarnings: onUpdate(s, sc) == structs.OnUpdateIgnoreWarnings,
		}
		if cr := s.CheckRestart.Merge(sc.CheckRestart); cr != nil {
			def.Restart = CheckRestart{Limit: cr.Limit, Grace: cr.Grace, IgnoreWarnings: cr.IgnoreWarnings}
		}
		if onUpdate(s, sc) == structs.OnUpdateIgnore {
			def.Mode = ModeReadiness
		}
		if sc.Type == CheckScript {
			r.script(&def, sc)
			continue
		}
		label := sc.PortLabel
		if label == "" {
			label = s.PortLabel
		}
		addr, err := address(env, label, r.nodeIP)
		if err != nil {
			def.Err = err.Error()
		}
		def.Address = addr
		r.checks = append(r.checks, def)
	}
}

// script completes a script check: its command, interpolated with its
// task's environment.
func (r *resolver) script(def *CheckDef, sc structs.ServiceCheck) {
	def.Path, def.Header = "", nil
	env := r.taskEnvs[def.Task]
	switch {
	case def.Task == "":
		def.Err = "script check has no task to run in"
	case env == nil:
		def.Err = fmt.Sprintf("script check task %q is not a task of the group", def.Task)
	default:
		def.Command = env.ReplaceSlice(append([]string{sc.Command}, sc.Args...))
	}
	r.checks = append(r.checks, *def)
}

// onUpdate is the check's on_update, else its service's.
func onUpdate(s *structs.Service, sc structs.ServiceCheck) string {
	if sc.OnUpdate != "" {
		return sc.OnUpdate
	}
	return s.OnUpdate
}

// address resolves a port label to host:port; a numeric label is a port
// on nodeIP.
func address(env *taskenv.Env, label, nodeIP string) (string, error) {
	if label == "" {
		return "", errors.New("check has no port label")
	}
	key := taskenv.CleanKey(label)
	if port, ok := env.Get("NOMAD_HOST_PORT_" + key); ok {
		ip, _ := env.Get("NOMAD_IP_" + key)
		return net.JoinHostPort(ip, port), nil
	}
	if n, err := strconv.Atoi(label); err == nil && n > 0 && n < 65536 {
		return net.JoinHostPort(nodeIP, label), nil
	}
	return "", fmt.Errorf("port label %q is not a port of the allocation", label)
}

func replaceHeader(env *taskenv.Env, h map[string][]string) map[string][]string {
	if len(h) == 0 {
		return nil
	}
	out := maps.Clone(h)
	for k, vs := range out {
		out[k] = env.ReplaceSlice(vs)
	}
	return out
}

// checkID is a stable ID of a check of an allocation.
func checkID(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:16])
}
