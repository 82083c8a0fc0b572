package nomad

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

func TestAllowHostVolumes(t *testing.T) {
	p, err := acl.Parse(`
namespace "default" { policy = "write" }
host_volume "rw-*" { policy = "write" }
host_volume "ro" { policy = "read" }
host_volume "rw-denied" { policy = "deny" }
`)
	require.NoError(t, err)
	caller, err := acl.Compile([]*acl.Policy{p})
	require.NoError(t, err)
	job := func(source string, readOnly bool) *structs.Job {
		return &structs.Job{TaskGroups: []*structs.TaskGroup{{Name: "g", Volumes: map[string]*structs.VolumeRequest{
			"v": {Type: structs.VolumeTypeHost, Source: source, ReadOnly: readOnly}}}}}
	}
	cases := []struct {
		source   string
		readOnly bool
		want     bool
	}{
		{"rw-data", false, true},
		{"rw-data", true, true},
		{"ro", true, true},
		{"ro", false, false},
		{"rw-denied", true, false},
		{"other", true, false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, allowHostVolumes(caller, job(tc.source, tc.readOnly)), "%s read_only=%t", tc.source, tc.readOnly)
	}
	assert.True(t, allowHostVolumes(nil, job("other", false)), "no ACLs: allowed")
	assert.True(t, allowHostVolumes(caller, &structs.Job{TaskGroups: []*structs.TaskGroup{{Name: "g"}}}))
}
