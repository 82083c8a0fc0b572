package apiconv

import (
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad/structs"
)

// HostVolumeFromAPI converts a submitted dynamic host volume.
func HostVolumeFromAPI(v *api.HostVolume) *structs.HostVolume {
	return convertInto[structs.HostVolume](v)
}

// HostVolumeToAPI converts a stored dynamic host volume for API readers.
func HostVolumeToAPI(v *structs.HostVolume) *api.HostVolume {
	return convertInto[api.HostVolume](v)
}

// HostVolumeStubToAPI converts a volume for the list of volumes.
func HostVolumeStubToAPI(v *structs.HostVolume) *api.HostVolumeStub {
	return convertInto[api.HostVolumeStub](v)
}
