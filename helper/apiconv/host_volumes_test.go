package apiconv

import (
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/assert"
)

func TestHostVolumeRoundTrip(t *testing.T) {
	v := filled[api.HostVolume]()
	v.Allocations = nil // denormalized on read, never stored
	back := HostVolumeToAPI(HostVolumeFromAPI(v))
	assert.Equal(t, v, back)
	stub := HostVolumeStubToAPI(HostVolumeFromAPI(v))
	assert.Equal(t, v.ID, stub.ID)
	assert.Equal(t, v.State, stub.State)
	assert.Equal(t, v.CapacityBytes, stub.CapacityBytes)
}
