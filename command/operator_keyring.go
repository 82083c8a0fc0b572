package command

import (
	"fmt"

	"github.com/hashicorp/nomad/api"
)

const keyringListHelp = `Usage: drover operator keyring list [options]

  List the cluster's signing keys (never their key material).

Keyring List Options:

  -json
    Output the keys in their JSON format.`

const keyringRotateHelp = `Usage: drover operator keyring rotate [options]

  Generate a new active signing key. The previous active key becomes
  inactive and stays published in the JWKS until it is removed.

Keyring Rotate Options:

  -json
    Output the new key in its JSON format.`

const keyringRemoveHelp = `Usage: drover operator keyring remove [options] <key ID>

  Remove an inactive signing key. The active key cannot be removed: rotate
  first.

Keyring Remove Options:

  -force
    Accepted for compatibility with Nomad; Drover keeps no data encrypted
    with old keys, so it changes nothing.`

// keyringList implements `drover operator keyring list`.
func keyringList(m *Meta, args []string) int {
	fs := m.FlagSet("operator keyring list")
	var jsonOut bool
	fs.BoolVar(&jsonOut, "json", false, "")
	if code, ok := m.parse(fs, args, keyringListHelp); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return m.usageError("This command takes no arguments", keyringListHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	keys, _, err := c.Keyring().List(nil)
	if err != nil {
		m.errorf("error: %s", err)
		return 1
	}
	if jsonOut {
		return m.printJSON(keys)
	}
	m.outf("%s", renderKeys(keys))
	return 0
}

// keyringRotate implements `drover operator keyring rotate`.
func keyringRotate(m *Meta, args []string) int {
	fs := m.FlagSet("operator keyring rotate")
	var jsonOut bool
	fs.BoolVar(&jsonOut, "json", false, "")
	if code, ok := m.parse(fs, args, keyringRotateHelp); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return m.usageError("This command takes no arguments", keyringRotateHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	key, _, err := c.Keyring().Rotate(nil, nil)
	if err != nil {
		m.errorf("error: %s", err)
		return 1
	}
	if jsonOut {
		return m.printJSON(key)
	}
	m.outf("%s", renderKeys([]*api.RootKeyMeta{key}))
	return 0
}

// keyringRemove implements `drover operator keyring remove`.
func keyringRemove(m *Meta, args []string) int {
	fs := m.FlagSet("operator keyring remove")
	var force bool
	fs.BoolVar(&force, "force", false, "")
	c, arg, code, ok := m.oneArg(fs, args, keyringRemoveHelp, "<key ID>")
	if !ok {
		return code
	}
	if _, err := c.Keyring().Delete(&api.KeyringDeleteOptions{KeyID: arg, Force: force}, nil); err != nil {
		m.errorf("error: %s", err)
		return 1
	}
	m.outf("Removed encryption key %s", arg)
	return 0
}

// renderKeys is the key table of `operator keyring list` and `rotate`.
func renderKeys(keys []*api.RootKeyMeta) string {
	rows := []string{"Key|State|Create Time|Publish Time"}
	for _, k := range keys {
		publish := ""
		if k.PublishTime != 0 {
			publish = formatUnixNano(k.PublishTime)
		}
		rows = append(rows, fmt.Sprintf("%s|%s|%s|%s", k.KeyID, k.State, formatUnixNano(k.CreateTime), publish))
	}
	return formatList(rows)
}
