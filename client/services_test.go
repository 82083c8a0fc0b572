package client

import (
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/wire"
)

// catalogAlloc is an allocation of group "g" with tasks "web" and "side",
// a group service, two services of "web" and one of another provider.
func catalogAlloc() (*structs.Allocation, *structs.Node) {
	job := &structs.Job{ID: "shop", Namespace: "default", Name: "shop", TaskGroups: []*structs.TaskGroup{{
		Name: "g",
		Services: []*structs.Service{
			{Name: "${NOMAD_GROUP_NAME}-lb", PortLabel: "http", Provider: "nomad", Tags: []string{"grp"}},
		},
		Tasks: []*structs.Task{
			{Name: "web", Services: []*structs.Service{
				{Name: "web", PortLabel: "http", Provider: "nomad", Tags: []string{"v1", "${NOMAD_TASK_NAME}"}, CanaryTags: []string{"canary"}},
				{Name: "web-admin", PortLabel: "admin", AddressMode: "alloc", Provider: "nomad"},
				{Name: "web-raw", PortLabel: "9999", Provider: "nomad", Address: "${attr.unique.hostname}.example"},
				{Name: "elsewhere", PortLabel: "http", Provider: "consul"},
			}},
			{Name: "side", Services: []*structs.Service{{Name: "side", Provider: "nomad"}}},
		},
	}}}
	a := &structs.Allocation{
		ID: "a1", Namespace: "default", JobID: "shop", Job: job, TaskGroup: "g", NodeID: "n1",
		DesiredStatus: structs.AllocDesiredStatusRun,
		AllocatedResources: &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{Ports: []structs.AllocatedPortMapping{
			{Label: "http", Value: 23001, HostIP: "10.0.0.5"},
			{Label: "admin", Value: 23002, To: 9000},
		}}},
		TaskStates: map[string]*structs.TaskState{"web": {State: "running"}, "side": {State: "pending"}},
	}
	node := &structs.Node{ID: "n1", Datacenter: "dc1", Attributes: map[string]string{
		"unique.network.ip-address": "10.0.0.9", "unique.hostname": "box",
	}}
	return a, node
}

func regSummary(regs []*api.ServiceRegistration) []string {
	out := []string{}
	for _, r := range regs {
		out = append(out, r.ID+" "+r.ServiceName+" "+r.Address+":"+strconv.Itoa(r.Port)+" ["+strings.Join(r.Tags, ",")+"]")
	}
	return out
}

// TestServiceRegistrations_WhatAnAllocationAdvertises: table of the
// allocation states and what the native catalog gets.
func TestServiceRegistrations_WhatAnAllocationAdvertises(t *testing.T) {
	running := []string{
		"_nomad-task-a1-group-g-g-lb-http g-lb 10.0.0.5:23001 [grp]",
		"_nomad-task-a1-web-web-admin-admin web-admin 10.0.0.9:9000 []",
		"_nomad-task-a1-web-web-http web 10.0.0.5:23001 [v1,web]",
		"_nomad-task-a1-web-web-raw-9999 web-raw box.example:9999 []",
	}
	cases := map[string]struct {
		change func(a *structs.Allocation)
		want   []string
	}{
		"web runs: its services and the group's": {change: func(*structs.Allocation) {}, want: running},
		"side runs too: its service without a port": {change: func(a *structs.Allocation) {
			a.TaskStates["side"].State = "running"
		}, want: []string{
			running[0], "_nomad-task-a1-side-side- side 10.0.0.9:0 []",
			running[1], running[2], running[3],
		}},
		"canary: canary_tags replace tags": {change: func(a *structs.Allocation) {
			a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
		}, want: []string{running[0], running[1], "_nomad-task-a1-web-web-http web 10.0.0.5:23001 [canary]", running[3]}},
		"nothing runs yet": {change: func(a *structs.Allocation) {
			a.TaskStates["web"].State = "pending"
		}, want: []string{}},
		"web is dead": {change: func(a *structs.Allocation) {
			a.TaskStates["web"].State = "dead"
		}, want: []string{}},
		"the server stops it: services go before the tasks": {change: func(a *structs.Allocation) {
			a.DesiredStatus = structs.AllocDesiredStatusStop
		}, want: []string{}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			a, node := catalogAlloc()
			c.change(a)
			regs := serviceRegistrations(a, node)
			require.Equal(t, c.want, regSummary(regs))
			for _, r := range regs {
				require.Equal(t, []string{"default", "shop", "a1", "n1", "dc1"}, []string{r.Namespace, r.JobID, r.AllocID, r.NodeID, r.Datacenter})
			}
		})
	}
	require.Nil(t, serviceRegistrations(nil, nil))

	a, _ := catalogAlloc()
	require.True(t, definesServices(a))
	tg := a.Job.TaskGroups[0]
	tg.Services, tg.Tasks[1].Services = nil, nil
	tg.Tasks[0].Services = tg.Tasks[0].Services[3:] // only the other provider's
	require.False(t, definesServices(a))
	require.False(t, definesServices(nil))
}

// TestServiceSync_PendingUntilAcknowledged: what differs from what the
// servers acknowledged is pending; an allocation of a group with services
// is sent from its first report (a clear when it advertises nothing yet),
// one without is not sent until it registers something; a resync sends
// everything again; a forgotten allocation is not sent.
func TestServiceSync_PendingUntilAcknowledged(t *testing.T) {
	s := newServiceSync()
	s.set("quiet", nil, false)
	require.Empty(t, s.pending(), "no services defined, none advertised: nothing to send")
	s.set("starting", nil, true)
	batch := s.pending()
	require.Equal(t, []string{"starting"}, allocIDsOf(batch), "a first clear for a group with services")
	require.Empty(t, batch[0].Services)
	s.acked(batch)
	require.Empty(t, s.pending())
	s.set("starting", nil, true)
	require.Empty(t, s.pending(), "cleared once: not again")

	web := []*api.ServiceRegistration{{ID: "_nomad-task-a1-web-web-http", ServiceName: "web", Port: 1}}
	s.set("a1", web, true)
	s.set("a2", []*api.ServiceRegistration{{ID: "_nomad-task-a2-web-web-http", ServiceName: "web", Port: 2}}, true)
	select {
	case <-s.kick:
	default:
		t.Fatal("a change wakes the loop")
	}
	batch = s.pending()
	require.Equal(t, []string{"a1", "a2"}, allocIDsOf(batch))
	s.acked(batch)
	require.Empty(t, s.pending())

	s.set("a1", web, true) // the same again
	require.Empty(t, s.pending())
	s.set("a1", nil, true)
	batch = s.pending()
	require.Equal(t, []string{"a1"}, allocIDsOf(batch))
	require.Empty(t, batch[0].Services)
	s.acked(batch)
	require.Empty(t, s.pending())

	s.resync()
	require.Equal(t, []string{"a1", "a2", "starting"}, allocIDsOf(s.pending()), "after a resync everything is sent again")
	s.forget("a1")
	s.forget("a2")
	s.forget("starting")
	require.Empty(t, s.pending())
	s.acked([]*wire.AllocServices{{AllocID: "a2"}})
	require.NotContains(t, s.sent, "a2", "an answer for a forgotten allocation is not kept")
}

func allocIDsOf(batch []*wire.AllocServices) []string {
	out := []string{}
	for _, as := range batch {
		out = append(out, as.AllocID)
	}
	return out
}
