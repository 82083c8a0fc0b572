package structs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func okHostVolume(params map[string]string) *HostVolume {
	return &HostVolume{
		Name: "data", PluginID: HostVolumePluginMkdir, Parameters: params,
		RequestedCapabilities: []*HostVolumeCapability{{
			AttachmentMode: HostVolumeAttachmentModeFilesystem, AccessMode: HostVolumeAccessModeSingleNodeWriter,
		}},
	}
}

// The mkdir plugin's parameters are checked at creation: a value the
// client could not carry out would leave the volume pending for ever.
func TestHostVolumeValidate_MkdirParameters(t *testing.T) {
	cases := []struct {
		name   string
		params map[string]string
		want   string // "" when accepted
	}{
		{"none", nil, ""},
		{"all set", map[string]string{"mode": "0750", "uid": "1000", "gid": "0"}, ""},
		{"mode without leading zero", map[string]string{"mode": "755"}, ""},
		{"mode not octal", map[string]string{"mode": "rwx"}, `parameters: mode "rwx" must be an octal permission from 0 to 0777`},
		{"mode with 8", map[string]string{"mode": "0789"}, `parameters: mode "0789" must be an octal permission from 0 to 0777`},
		{"mode with special bits", map[string]string{"mode": "1777"}, `parameters: mode "1777" must be an octal permission from 0 to 0777`},
		{"uid not a number", map[string]string{"uid": "nobody"}, `parameters: uid "nobody" must be a number from 0`},
		{"negative gid", map[string]string{"gid": "-1"}, `parameters: gid "-1" must be a number from 0`},
		{"unknown", map[string]string{"size": "1G"}, `parameters: "size" is not a parameter of the "mkdir" plugin (mode, uid, gid)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := okHostVolume(tc.params).Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			var verr *ValidationError
			require.ErrorAs(t, err, &verr)
			assert.Contains(t, verr.Problems, tc.want)
		})
	}
}
