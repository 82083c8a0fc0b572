package docker

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/go-connections/nat"

	"github.com/drover-project/drover/drivers"
)

// Labels the driver sets on every container it creates.
const (
	LabelAllocID   = "drover.alloc_id"
	LabelTaskName  = "drover.task_name"
	LabelJobName   = "drover.job_name"
	LabelNamespace = "drover.namespace"
)

var reservedLabels = []string{LabelAllocID, LabelTaskName, LabelJobName, LabelNamespace}

// Paths inside the container of the task's directories.
const (
	containerAllocDir   = "/alloc"
	containerLocalDir   = "/local"
	containerSecretsDir = "/secrets"
)

// containerName returns "<task>-<alloc>", with characters docker does not
// accept in names replaced by '_'.
func containerName(cfg *drivers.TaskConfig) string {
	name := cfg.TaskName + "-" + cfg.AllocID
	if cfg.TaskName == "" && cfg.AllocID == "" {
		name = cfg.ID
	}
	b := []byte(name)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
		if !ok || (i == 0 && (c == '_' || c == '.' || c == '-')) {
			b[i] = '_'
		}
	}
	if len(b) > 0 && b[0] == '_' {
		b[0] = 'x'
	}
	return string(b)
}

// cleanKey turns a port label into its env var suffix, as the task
// environment does (characters other than letters, digits and '_' become
// '_').
func cleanKey(key string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		}
		return '_'
	}, key)
}

// containerSpec builds the create request of a task's container. It is the
// gate of the security options so: a setting they do not allow (see
// checkPolicy), or a bind source outside the allocation directory with
// volumes disabled (see taskMounts), gives an unrecoverable *PolicyError
// and no spec.
func containerSpec(cfg *drivers.TaskConfig, tc *taskConfig, so securityOptions, image string) (*container.Config, *container.HostConfig, error) {
	if err := checkPolicy(tc, so); err != nil {
		return nil, nil, drivers.NewRecoverableError(err, false)
	}
	labels := map[string]string{}
	for k, v := range tc.Labels {
		labels[k] = v
	}
	labels[LabelAllocID] = cfg.AllocID
	labels[LabelTaskName] = cfg.TaskName
	labels[LabelJobName] = cfg.JobName
	labels[LabelNamespace] = cfg.Namespace

	cc := &container.Config{
		Image:      image,
		Env:        containerEnv(cfg.Env),
		Labels:     labels,
		User:       cfg.User,
		WorkingDir: tc.WorkDir,
	}
	if len(tc.Entrypoint) > 0 {
		cc.Entrypoint = append([]string(nil), tc.Entrypoint...)
	}
	switch {
	case tc.Command != "":
		cc.Cmd = append([]string{tc.Command}, tc.Args...)
	case len(tc.Args) > 0:
		cc.Cmd = append([]string(nil), tc.Args...)
	}

	sc := tc.Security
	hc := &container.HostConfig{
		NetworkMode: container.NetworkMode(tc.NetworkMode),
		Privileged:  sc.Privileged,
		CapAdd:      slices.Clone(sc.CapAdd),
		CapDrop:     capDrop(sc, so),
		PidMode:     container.PidMode(sc.PidMode),
		IpcMode:     container.IpcMode(sc.IpcMode),
		UTSMode:     container.UTSMode(sc.UtsMode),
		UsernsMode:  container.UsernsMode(sc.UsernsMode),
		SecurityOpt: slices.Clone(sc.SecurityOpt),
		Runtime:     sc.Runtime,
	}
	for _, d := range sc.Devices {
		hc.Devices = append(hc.Devices, container.DeviceMapping{
			PathOnHost: d.HostPath, PathInContainer: d.ContainerPath, CgroupPermissions: d.CgroupPermissions,
		})
	}
	if err := applyContainerKeys(cfg, tc.Keys, cc, hc); err != nil {
		return nil, nil, err
	}

	mounts, binds, err := taskMounts(cfg, tc, so)
	if err != nil {
		return nil, nil, err
	}
	hc.Mounts, hc.Binds = mounts, binds

	if published := publishedPorts(tc.Ports, tc.Keys.PortMap, cfg.Env); len(published) > 0 && !hc.NetworkMode.IsHost() {
		exposed, bindings, err := portBindings(published, cfg.Env)
		if err != nil {
			return nil, nil, err
		}
		cc.ExposedPorts, hc.PortBindings = exposed, bindings
		// The task sees the port it listens on, as with Nomad's port_map.
		env := maps.Clone(cfg.Env)
		for _, p := range published {
			env["NOMAD_PORT_"+cleanKey(p.Label)] = p.ContainerPort
		}
		cc.Env = containerEnv(env)
	}
	if err := joinGroupNetwork(cfg, tc, cc, hc); err != nil {
		return nil, nil, err
	}
	return cc, hc, nil
}

// containerEnv renders the task's environment for the container; the
// directory variables point at the container paths of the directories.
func containerEnv(env map[string]string) []string {
	m := make(map[string]string, len(env)+3)
	for k, v := range env {
		m[k] = v
	}
	m["NOMAD_ALLOC_DIR"] = containerAllocDir
	m["NOMAD_TASK_DIR"] = containerLocalDir
	m["NOMAD_SECRETS_DIR"] = containerSecretsDir
	if sock, ok := strings.CutPrefix(env["NOMAD_UNIX_ADDR"], "unix://"); ok && path.Base(path.Dir(sock)) == "secrets" {
		// The task API socket in the task's secrets dir, which is
		// bind-mounted at containerSecretsDir (a value the job set
		// itself is left alone).
		m["NOMAD_UNIX_ADDR"] = "unix://" + path.Join(containerSecretsDir, path.Base(sock))
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// portBindings publishes each port: its container port, host
// NOMAD_IP_<l>:NOMAD_HOST_PORT_<l>, for TCP and UDP.
func portBindings(ports []publishedPort, env map[string]string) (nat.PortSet, nat.PortMap, error) {
	exposed := nat.PortSet{}
	bindings := nat.PortMap{}
	for _, pp := range ports {
		label := pp.Label
		key := cleanKey(label)
		to, host, ip := pp.ContainerPort, env["NOMAD_HOST_PORT_"+key], env["NOMAD_IP_"+key]
		if to == "" || host == "" {
			return nil, nil, &drivers.FieldError{Field: pp.Field, Rule: fmt.Sprintf("names port %q, which is not a port of the group's network block", label)}
		}
		if _, err := strconv.ParseUint(to, 10, 16); err != nil {
			return nil, nil, fmt.Errorf("port %q: bad container port %q", label, to)
		}
		if _, err := strconv.ParseUint(host, 10, 16); err != nil {
			return nil, nil, fmt.Errorf("port %q: bad host port %q", label, host)
		}
		if ip == "" {
			ip = "127.0.0.1"
		}
		for _, proto := range []string{"tcp", "udp"} {
			p := nat.Port(to + "/" + proto)
			exposed[p] = struct{}{}
			bindings[p] = append(bindings[p], nat.PortBinding{HostIP: ip, HostPort: host})
		}
	}
	return exposed, bindings, nil
}
