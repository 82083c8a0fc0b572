package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func TestFeasibleNetworkMode(t *testing.T) {
	hostOnly := []*structs.NetworkResource{{Mode: "host"}}
	withBridge := []*structs.NetworkResource{{Mode: "host"}, {Mode: "bridge"}}
	cases := []struct {
		name      string
		groupMode *string // nil: no network block
		nodeNets  []*structs.NetworkResource
		ok        bool
	}{
		{"no network block", nil, nil, true},
		{"host mode anywhere", strPtr("host"), nil, true},
		{"empty mode is host", strPtr(""), hostOnly, true},
		{"bridge on a bridge node", strPtr("bridge"), withBridge, true},
		{"bridge on a host-only node", strPtr("bridge"), hostOnly, false},
		{"bridge on a node that reports nothing", strPtr("bridge"), nil, false},
		{"cni mode not offered", strPtr("cni/mynet"), withBridge, false},
		{"cni mode offered", strPtr("cni/mynet"), []*structs.NetworkResource{{Mode: "host"}, {Mode: "cni/mynet"}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg := &structs.TaskGroup{Name: "g", Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec"}}}
			if tc.groupMode != nil {
				tg.Networks = []*structs.NetworkResource{{Mode: *tc.groupMode}}
			}
			node := &structs.Node{
				Drivers:       map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
				NodeResources: structs.NodeResources{Networks: tc.nodeNets},
			}
			ok, reason := NewFeasibleFunc(&structs.Job{TaskGroups: []*structs.TaskGroup{tg}})(node, tg)
			require.Equal(t, tc.ok, ok)
			if !tc.ok {
				require.Equal(t, ReasonMissingNetwork, reason)
			}
		})
	}
}

func strPtr(s string) *string { return &s }
