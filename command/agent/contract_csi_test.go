package agent

import (
	"net/http"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// Drover runs no CSI plugins: volume and plugin lists are empty, reads are
// 404s, and registering a volume is refused naming its plugin, with
// nothing written. The ACL rules of the endpoints still apply.
func TestContractCSINoPlugins(t *testing.T) {
	ta := newACLTestAgent(t)
	c := ta.client

	vols, _, err := c.CSIVolumes().List(nil)
	require.NoError(t, err)
	require.NotNil(t, vols)
	require.Empty(t, vols)
	hostVols, _, err := c.HostVolumes().List(nil, nil)
	require.NoError(t, err)
	require.Empty(t, hostVols)
	plugins, _, err := c.CSIPlugins().List(nil)
	require.NoError(t, err)
	require.Empty(t, plugins)

	_, _, err = c.CSIVolumes().Info("vol-1", nil)
	requireStatus(t, err, http.StatusNotFound, "volume not found")
	_, _, err = c.CSIPlugins().Info("ebs", nil)
	requireStatus(t, err, http.StatusNotFound, "plugin not found")
	err = c.CSIVolumes().Deregister("vol-1", true, nil)
	requireStatus(t, err, http.StatusNotFound, "volume not found")
	_, _, err = c.CSIVolumes().ListExternal("ebs", &api.QueryOptions{})
	requireStatus(t, err, http.StatusNotFound, "no CSI plugin named: ebs could be found")
	_, _, err = c.CSIVolumes().ListSnapshots("ebs", "", &api.QueryOptions{})
	requireStatus(t, err, http.StatusNotFound, "no CSI plugin named: ebs could be found")
	_, err = c.Raw().Response("/v1/volumes/external", nil)
	requireStatus(t, err, http.StatusBadRequest, "plugin_id is required")

	before := ta.Server().State().LatestIndex()
	_, err = c.CSIVolumes().Register(&api.CSIVolume{ID: "vol-1", Name: "vol-1", PluginID: "ebs"}, nil)
	requireStatus(t, err, http.StatusBadRequest, "no CSI plugin named: ebs could be found")
	_, _, err = c.CSIVolumes().Create(&api.CSIVolume{ID: "vol-1", Name: "vol-1", PluginID: "ebs"}, nil)
	requireStatus(t, err, http.StatusBadRequest, "no CSI plugin named: ebs could be found")
	_, err = c.CSIVolumes().Register(&api.CSIVolume{ID: "vol-1", Name: "vol-1"}, nil)
	requireStatus(t, err, http.StatusBadRequest, "PluginID is required")
	require.Equal(t, before, ta.Server().State().LatestIndex(), "nothing is written")

	_, err = c.Raw().Response("/v1/volumes", nil)
	requireStatus(t, err, http.StatusBadRequest, `type must be "csi" or "host"`)
	_, err = c.Raw().Response("/v1/plugins?type=device", nil)
	requireStatus(t, err, http.StatusBadRequest, `type must be "csi"`)

	// ACLs: anonymous may not list; csi-list-volume may list volumes but
	// not host volumes; plugins need the plugin policy.
	anon := ta.clientWith(t, "")
	_, _, err = anon.CSIVolumes().List(nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = anon.CSIPlugins().List(nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	tok := ta.tokenFor(t, "csi-list", `namespace "default" { capabilities = ["csi-list-volume"] }
plugin { policy = "list" }`)
	lister := ta.clientWith(t, tok.SecretID)
	_, _, err = lister.CSIVolumes().List(nil)
	require.NoError(t, err)
	_, _, err = lister.HostVolumes().List(nil, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = lister.CSIPlugins().List(nil)
	require.NoError(t, err)
	_, _, err = lister.CSIPlugins().Info("ebs", nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
}
