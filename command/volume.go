package command

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

const volumeCreateHelp = `Usage: drover volume create [options] <input>

  Create a volume from a specification file. Drover creates dynamic host
  volumes (type = "host") with its clients' built-in "mkdir" plugin; CSI
  volumes are not supported. Unless -detach is given, the command waits
  until the volume's node has created it (the volume is ready).

Create Options:

  -detach
    Return once the volume is recorded, without waiting for it to be ready.

  -verbose
    Display full IDs.`

// volumeReadyTimeout bounds the wait for a created volume to be ready.
var volumeReadyTimeout = 2 * time.Minute

func volumeCreate(m *Meta, args []string) int {
	return volumeWrite(m, args, "volume create", volumeCreateHelp, "creating", "Created",
		func(c *api.Client, spec *api.HostVolume) (*api.HostVolume, error) {
			resp, _, err := c.HostVolumes().Create(&api.HostVolumeCreateRequest{Volume: spec}, nil)
			if err != nil {
				return nil, err
			}
			return resp.Volume, nil
		})
}

// volumeWrite is `volume create` and `volume register`: read and parse
// the specification file, send it with write, then wait for the volume to
// be ready unless -detach. doing and done name the write in messages.
func volumeWrite(m *Meta, args []string, name, help, doing, done string, write func(*api.Client, *api.HostVolume) (*api.HostVolume, error)) int {
	var detach, verbose bool
	fs := m.FlagSet(name)
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	c, file, code, ok := m.oneArg(fs, args, help, "<input>")
	if !ok {
		return code
	}
	data, err := os.ReadFile(file)
	if err != nil {
		m.errorf("Error reading file %q: %s", file, err)
		return 1
	}
	spec, err := parseHostVolumeSpec(file, data)
	if err != nil {
		m.errorf("Error parsing the volume specification: %s", err)
		return 1
	}
	v, err := write(c, spec)
	if err != nil {
		m.errorf("Error %s volume: %s", doing, err)
		return 1
	}
	m.outf("==> %s host volume %s with ID %s", done, v.Name, v.ID)
	if detach {
		return 0
	}
	return waitVolumeReady(m, c, v, verbose)
}

// waitVolumeReady waits until the volume's node offers it (the volume is
// ready), then prints it.
func waitVolumeReady(m *Meta, c *api.Client, v *api.HostVolume, verbose bool) int {
	deadline := time.Now().Add(volumeReadyTimeout)
	index := v.ModifyIndex
	for v.State != api.HostVolumeStateReady {
		if time.Now().After(deadline) {
			m.errorf("Volume %s is still %s after %s", shortID(v.ID, verbose), v.State, volumeReadyTimeout)
			return 1
		}
		next, meta, err := c.HostVolumes().Get(v.ID, &api.QueryOptions{Namespace: v.Namespace, WaitIndex: index, WaitTime: 5 * time.Second})
		if err != nil {
			m.errorf("Error reading volume %s: %s", v.ID, err)
			return 1
		}
		v, index = next, meta.LastIndex
	}
	m.outf("  ✓ Host volume %q %s ready", shortID(v.ID, verbose), v.Name)
	m.outf("%s", formatHostVolume(v, verbose))
	return 0
}

const volumeRegisterHelp = `Usage: drover volume register [options] <input>

  Register an existing directory of a node as a host volume (type = "host",
  with node_id and host_path, and no plugin_id). CSI volumes are not
  supported. Unless -detach is given, the command waits until the volume's
  node has found the directory (the volume is ready). Deleting the volume
  later leaves the directory in place.

Register Options:

  -detach
    Return once the volume is recorded, without waiting for it to be ready.

  -verbose
    Display full IDs.`

func volumeRegister(m *Meta, args []string) int {
	return volumeWrite(m, args, "volume register", volumeRegisterHelp, "registering", "Registered",
		func(c *api.Client, spec *api.HostVolume) (*api.HostVolume, error) {
			resp, _, err := c.HostVolumes().Register(&api.HostVolumeRegisterRequest{Volume: spec}, nil)
			if err != nil {
				return nil, err
			}
			return resp.Volume, nil
		})
}

const volumeStatusHelp = `Usage: drover volume status [options] [volume]

  Display the dynamic host volumes, or one of them (by ID or ID prefix).

Status Options:

  -type <type>
    The type of volume: "host" (Drover has no CSI volumes).

  -node <id>
    List only the volumes of this node.

  -node-pool <pool>
    List only the volumes of this node pool.

  -json
    Output the volume(s) in JSON.

  -verbose
    Display full IDs.`

func volumeStatus(m *Meta, args []string) int {
	var typ, node, pool string
	var jsonOut, verbose bool
	fs := m.FlagSet("volume status")
	fs.StringVar(&typ, "type", "host", "")
	fs.StringVar(&node, "node", "", "")
	fs.StringVar(&pool, "node-pool", "", "")
	fs.BoolVar(&jsonOut, "json", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	if code, ok := m.parse(fs, args, volumeStatusHelp); !ok {
		return code
	}
	if code, ok := checkVolumeType(m, typ); !ok {
		return code
	}
	if fs.NArg() > 1 {
		return m.usageError("This command takes either no arguments or one: <volume>", volumeStatusHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	stubs, _, err := c.HostVolumes().List(&api.HostVolumeListRequest{NodeID: node, NodePool: pool},
		&api.QueryOptions{Prefix: fs.Arg(0)})
	if err != nil {
		m.errorf("Error querying volumes: %s", err)
		return 1
	}
	if fs.NArg() == 0 {
		if jsonOut {
			return m.printJSON(stubs)
		}
		if len(stubs) == 0 {
			m.outf("No dynamic host volumes")
			return 0
		}
		m.outf("%s", formatHostVolumeStubs(stubs, verbose))
		return 0
	}
	switch len(stubs) {
	case 0:
		m.errorf("No volume with prefix or ID %q found", fs.Arg(0))
		return 1
	case 1:
	default:
		m.errorf("Prefix matched multiple volumes\n\n%s", formatHostVolumeStubs(stubs, verbose))
		return 1
	}
	v, _, err := c.HostVolumes().Get(stubs[0].ID, &api.QueryOptions{Namespace: stubs[0].Namespace})
	if err != nil {
		m.errorf("Error querying volume: %s", err)
		return 1
	}
	if jsonOut {
		return m.printJSON(v)
	}
	m.outf("%s", formatHostVolume(v, verbose))
	if len(v.Allocations) > 0 {
		m.outf("\nAllocations\n%s", formatAllocStubs(v.Allocations, verbose))
	} else {
		m.outf("\nAllocations\nNo allocations placed")
	}
	return 0
}

const volumeDeleteHelp = `Usage: drover volume delete [options] <volume>

  Delete a dynamic host volume (by ID or ID prefix): its node's client
  removes the directory. A volume allocations still use is not deleted.

Delete Options:

  -type <type>
    The type of volume: "host" (Drover has no CSI volumes).`

func volumeDelete(m *Meta, args []string) int {
	var typ string
	fs := m.FlagSet("volume delete")
	fs.StringVar(&typ, "type", "host", "")
	c, arg, code, ok := m.oneArg(fs, args, volumeDeleteHelp, "<volume>")
	if !ok {
		return code
	}
	if code, ok := checkVolumeType(m, typ); !ok {
		return code
	}
	stubs, _, err := c.HostVolumes().List(nil, &api.QueryOptions{Prefix: arg})
	if err != nil {
		m.errorf("Error querying volumes: %s", err)
		return 1
	}
	if len(stubs) != 1 {
		if len(stubs) == 0 {
			m.errorf("No volume with prefix or ID %q found", arg)
		} else {
			m.errorf("Prefix matched multiple volumes\n\n%s", formatHostVolumeStubs(stubs, false))
		}
		return 1
	}
	if _, _, err := c.HostVolumes().Delete(&api.HostVolumeDeleteRequest{ID: stubs[0].ID}, &api.WriteOptions{Namespace: stubs[0].Namespace}); err != nil {
		m.errorf("Error deleting volume: %s", err)
		return 1
	}
	m.outf("Successfully deleted volume %q!", stubs[0].ID)
	return 0
}

func checkVolumeType(m *Meta, typ string) (int, bool) {
	switch typ {
	case "host":
		return 0, true
	case "csi":
		m.errorf("CSI volumes are not supported by Drover")
	default:
		m.errorf("Invalid volume type %q: type must be \"host\"", typ)
	}
	return 1, false
}

func formatHostVolumeStubs(stubs []*api.HostVolumeStub, verbose bool) string {
	sort.Slice(stubs, func(i, j int) bool { return stubs[i].ID < stubs[j].ID })
	rows := []string{"ID|Name|Namespace|Plugin ID|Node ID|Node Pool|State"}
	for _, v := range stubs {
		rows = append(rows, strings.Join([]string{shortID(v.ID, verbose), v.Name, v.Namespace, v.PluginID,
			shortID(v.NodeID, verbose), v.NodePool, string(v.State)}, "|"))
	}
	return formatList(rows)
}

func formatHostVolume(v *api.HostVolume, verbose bool) string {
	rows := []string{
		"ID|" + shortID(v.ID, verbose),
		"Name|" + v.Name,
		"Namespace|" + v.Namespace,
		"Plugin ID|" + v.PluginID,
		"Node ID|" + shortID(v.NodeID, verbose),
		"Node Pool|" + v.NodePool,
		"Capacity|" + fmt.Sprintf("%d B", v.CapacityBytes),
		"State|" + string(v.State),
		"Host Path|" + valueOr(v.HostPath, "<none>"),
	}
	return formatKV(rows)
}
