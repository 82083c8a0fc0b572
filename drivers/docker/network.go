package docker

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/rawexec"
)

// An allocation in bridge mode gets a pause container: a container in
// Docker's network mode "none" whose only process waits for a signal. Its
// network namespace is the allocation's (the client binds it on the
// allocation's path and attaches it to the bridge with CNI), its host name
// and resolv.conf the group's; the task containers join it (network_mode
// "container:<pause>"). Its image is built on the node, never pulled: a
// tarball holding this very (static) executable, imported with
// `docker import`, whose entrypoint is PauseArg.

// PauseArg is os.Args[1] of the pause container's process.
const PauseArg = "__drover_pause"

// Labels of pause containers, and the NetworkIsolation label holding the
// pause container's ID.
const (
	LabelPause        = "drover.pause"
	PauseContainerKey = "docker_pause_container_id"
	pauseRepo         = "drover-pause"
)

var _ drivers.NetworkCreator = (*Driver)(nil)

func init() { rawexec.RegisterHelper(PauseArg, runPause) }

// runPause is the pause container's process: PID 1, it waits for SIGTERM
// or SIGINT and exits 0.
func runPause([]string) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	<-sigs
	return 0
}

func pauseName(allocID string) string { return "drover_pause_" + allocID }

// CreateNetwork returns the allocation's pause container's namespace,
// starting the container unless it runs already (created is false then).
func (d *Driver) CreateNetwork(req *drivers.NetworkCreateRequest) (*drivers.NetworkIsolation, bool, error) {
	cli, err := d.client()
	if err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	name := pauseName(req.AllocID)
	if ins, err := cli.ContainerInspect(ctx, name); err == nil {
		if ins.State != nil && ins.State.Running && ins.State.Pid > 0 {
			return pauseIsolation(ins.ID, ins.State.Pid), false, nil
		}
		if err := cli.ContainerRemove(ctx, ins.ID, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			return nil, false, daemonError(fmt.Errorf("docker: removing stopped pause container %s: %w", name, err))
		}
	} else if !cerrdefs.IsNotFound(err) {
		return nil, false, daemonError(fmt.Errorf("docker: inspecting pause container %s: %w", name, err))
	}
	ref, err := d.pauseImage(ctx, cli)
	if err != nil {
		return nil, false, err
	}
	cc, hc := pauseSpec(req, ref)
	created, err := cli.ContainerCreate(ctx, cc, hc, nil, nil, name)
	if err != nil {
		return nil, false, daemonError(fmt.Errorf("docker: creating pause container %s: %w", name, cleanDaemonError(err)))
	}
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		_ = cli.ContainerRemove(ctx, created.ID, container.RemoveOptions{Force: true})
		return nil, false, daemonError(fmt.Errorf("docker: starting pause container %s: %w", name, cleanDaemonError(err)))
	}
	ins, err := cli.ContainerInspect(ctx, created.ID)
	if err != nil || ins.State == nil || ins.State.Pid <= 0 {
		_ = cli.ContainerRemove(ctx, created.ID, container.RemoveOptions{Force: true})
		return nil, false, daemonError(fmt.Errorf("docker: pause container %s did not start: %v", name, err))
	}
	return pauseIsolation(created.ID, ins.State.Pid), true, nil
}

func pauseIsolation(id string, pid int) *drivers.NetworkIsolation {
	return &drivers.NetworkIsolation{
		Path:   fmt.Sprintf("/proc/%d/ns/net", pid),
		Labels: map[string]string{PauseContainerKey: id},
	}
}

// pauseSpec is the pause container of req: no network of Docker's, the
// group's host name and DNS, the allocation's label.
func pauseSpec(req *drivers.NetworkCreateRequest, ref string) (*container.Config, *container.HostConfig) {
	cc := &container.Config{
		Image:    ref,
		Hostname: req.Hostname,
		Labels:   map[string]string{LabelAllocID: req.AllocID, LabelPause: "true"},
	}
	hc := &container.HostConfig{NetworkMode: "none", LogConfig: container.LogConfig{Type: "none"}}
	if req.DNS != nil {
		hc.DNS, hc.DNSSearch, hc.DNSOptions = req.DNS.Servers, req.DNS.Searches, req.DNS.Options
	}
	return cc, hc
}

// DestroyNetwork removes the allocation's pause container.
func (d *Driver) DestroyNetwork(allocID string, iso *drivers.NetworkIsolation) error {
	cli, err := d.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	id := pauseName(allocID)
	if iso != nil && iso.Labels[PauseContainerKey] != "" {
		id = iso.Labels[PauseContainerKey]
	}
	err = cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return daemonError(fmt.Errorf("docker: removing pause container of %s: %w", allocID, err))
	}
	return nil
}

// joinGroupNetwork puts a task's container in its allocation's pause
// container's namespace. Docker then gives it the pause container's host
// name and resolv.conf; ports are the namespace's (mapped by CNI), not
// published by Docker.
func joinGroupNetwork(cfg *drivers.TaskConfig, tc *taskConfig, cc *container.Config, hc *container.HostConfig) error {
	if cfg.Network == nil {
		return nil
	}
	pause := cfg.Network.Labels[PauseContainerKey]
	if pause == "" {
		return errors.New("the allocation's network namespace has no pause container")
	}
	if tc.NetworkMode != "" {
		return drivers.NewRecoverableError(&drivers.FieldError{Field: "network_mode",
			Rule: "cannot be set in a group with network mode \"bridge\": the task joins the group's namespace"}, false)
	}
	hc.NetworkMode = container.NetworkMode("container:" + pause)
	cc.Hostname, cc.Domainname = "", ""
	hc.DNS, hc.DNSSearch, hc.DNSOptions, hc.ExtraHosts = nil, nil, nil, nil
	cc.ExposedPorts, hc.PortBindings = nil, nil
	return nil
}

// pauseImage returns the pause image of this executable, importing it
// once: drover-pause:<first 12 hex digits of its SHA-256>.
func (d *Driver) pauseImage(ctx context.Context, cli *client.Client) (string, error) {
	d.pauseMu.Lock()
	defer d.pauseMu.Unlock()
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("docker: pause image: %w", err)
	}
	if err := checkStatic(self); err != nil {
		return "", err
	}
	sum, size, err := fileDigest(self)
	if err != nil {
		return "", fmt.Errorf("docker: pause image: %w", err)
	}
	ref := pauseRepo + ":" + sum[:12]
	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		return ref, nil
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writePauseTar(pw, self, size)) }()
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: pr, SourceName: "-"}, ref,
		image.ImportOptions{Changes: []string{`ENTRYPOINT ["/drover", "` + PauseArg + `"]`}})
	if err != nil {
		_ = pr.CloseWithError(err)
		return "", daemonError(fmt.Errorf("docker: importing the pause image: %w", err))
	}
	_, err = io.Copy(io.Discard, rc)
	rc.Close()
	if err != nil {
		return "", daemonError(fmt.Errorf("docker: importing the pause image: %w", err))
	}
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		return "", daemonError(fmt.Errorf("docker: the imported pause image is missing: %w", err))
	}
	return ref, nil
}

// checkStatic refuses a dynamically linked executable: the pause image
// holds nothing but it.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("docker: pause image: reading %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("docker: pause image: %s is dynamically linked; bridge mode with Docker tasks needs a static drover (CGO_ENABLED=0, as `make build` does)", path)
		}
	}
	return nil
}

func fileDigest(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// writePauseTar writes the pause image's only file, /drover.
func writePauseTar(w io.Writer, self string, size int64) error {
	f, err := os.Open(self)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: "drover", Mode: 0o755, Size: size, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, f, size); err != nil {
		return err
	}
	return tw.Close()
}
