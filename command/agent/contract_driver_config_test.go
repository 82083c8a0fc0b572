package agent

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// The server checks each task's driver config against the driver's schema
// at validate, plan and register: a valid config is reported validated
// (so `nomad job validate` does not print "Driver configuration not
// validated"), an unknown key is a 400 naming it before anything is
// written, and a driver Drover lacks is not validated but accepted.
func TestContractDriverConfigValidatedOnTheServer(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client

	ok, _, err := c.Jobs().Validate(testJob("web"), nil)
	require.NoError(t, err)
	require.Empty(t, ok.Error)
	require.True(t, ok.DriverConfigValidated)

	bad := testJob("bad")
	bad.TaskGroups[0].Tasks[0].Config["port_mapp"] = "x"
	res, _, err := c.Jobs().Validate(bad, nil)
	require.NoError(t, err)
	require.Contains(t, res.Error, `task "server": config: port_mapp is not a known option`)

	_, _, err = c.Jobs().Register(bad, nil)
	requireStatus(t, err, http.StatusBadRequest, "port_mapp is not a known option")
	_, _, err = c.Jobs().Plan(bad, false, nil)
	requireStatus(t, err, http.StatusBadRequest, "port_mapp is not a known option")
	_, _, err = c.Jobs().Info("bad", nil)
	require.Error(t, err, "nothing was written")

	other := testJob("pod")
	other.TaskGroups[0].Tasks[0].Driver = "podman"
	res, _, err = c.Jobs().Validate(other, nil)
	require.NoError(t, err)
	require.Empty(t, res.Error)
	require.False(t, res.DriverConfigValidated, "Drover has no podman driver to check it with")
}
