package dockertest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
)

// EngineOptions configures StartEngine.
type EngineOptions struct {
	// StorageDriver is the engine's storage driver; default "vfs", which
	// needs no kernel or FUSE support (it copies every layer, fine for
	// small test images).
	StorageDriver string
	// Dockerd is the dockerd binary; default "dockerd" on PATH, then
	// /usr/sbin/dockerd and /usr/bin/dockerd.
	Dockerd string
}

// Engine is a private Docker engine: a dockerd (with the containerd it
// starts and manages) of its own, with its own data, state and socket under
// one temporary directory, and a bridge interface of its own that no
// container uses (it never touches iptables, so its containers run with
// network_mode "host").
//
// Never start a dockerd with "--bridge none" beside the machine's engine:
// such a dockerd deletes the host's docker0 interface at start, and the
// machine's engine can no longer start a bridged container. Pulls from a registry on
// 127.0.0.0/8 go over plain HTTP as on any engine.
type Engine struct {
	// Host is the engine's endpoint, "unix:///…/docker.sock", for
	// DOCKER_HOST or the docker plugin's endpoint.
	Host string
	// Root is the directory holding everything the engine writes.
	Root string

	cmd  *exec.Cmd
	exit chan error // the dockerd process's Wait result
}

// ownerFile in an engine's Root names the pid of the process that started
// it; a later StartEngine tears down engines whose owner is gone.
const (
	engineDirPrefix = "drover-dockerd-"
	ownerFile       = "owner.pid"
)

// StartEngine starts a private Docker engine for the test and tears it down
// in t.Cleanup: containers removed, dockerd stopped (killed after 30s), its
// containerd and leftover shims killed by pid, every mount under Root
// unmounted and Root removed. It needs root and the dockerd, containerd and
// runc binaries; without them the test is skipped loudly (failed with
// DROVER_REQUIRE_DOCKER=1). Engines left behind by a test process that died
// are torn down first.
func StartEngine(t testing.TB, opts EngineOptions) *Engine {
	t.Helper()
	skip := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf("PRIVATE DOCKER ENGINE NOT AVAILABLE: skipping %s: %s", t.Name(), fmt.Sprintf(format, args...))
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s (and %s=1)", msg, RequireEnv)
		}
		fmt.Fprintf(os.Stderr, "\n!!!!!!!! %s !!!!!!!!\n\n", msg)
		t.Skip(msg)
	}
	if os.Geteuid() != 0 {
		skip("a private dockerd needs root")
	}
	bin, err := findDockerd(opts.Dockerd)
	if err != nil {
		skip("%v", err)
	}
	reapStaleEngines(t)

	root, err := os.MkdirTemp("", engineDirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{Root: root, Host: "unix://" + filepath.Join(root, "docker.sock"), exit: make(chan error, 1)}
	t.Cleanup(func() {
		if err := e.teardown(t.Logf); err != nil {
			t.Errorf("private docker engine %s: %v", root, err)
		}
	})
	if err := os.WriteFile(filepath.Join(root, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		t.Fatal(err)
	}
	// An empty config file, so that the machine's /etc/docker/daemon.json
	// (its data-root, storage driver) does not apply.
	if err := os.WriteFile(filepath.Join(root, "daemon.json"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	driver := opts.StorageDriver
	if driver == "" {
		driver = "vfs"
	}
	bridge, err := createBridge(root)
	if err != nil {
		skip("no bridge interface for the private engine: %v", err)
	}
	logf, err := os.Create(filepath.Join(root, "dockerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	e.cmd = exec.Command(bin,
		"--config-file", filepath.Join(root, "daemon.json"),
		"--data-root", filepath.Join(root, "data"),
		"--exec-root", filepath.Join(root, "exec"),
		"--pidfile", filepath.Join(root, "dockerd.pid"),
		"--host", e.Host,
		"--storage-driver", driver,
		"--bridge", bridge,
		"--iptables=false", "--ip6tables=false", "--ip-forward=false", "--ip-masq=false",
	)
	e.cmd.Stdout, e.cmd.Stderr = logf, logf
	e.cmd.Env = engineEnv()
	// Its own process group, so that a terminal's signals reach only the
	// test and the engine is stopped by teardown alone.
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := e.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() { e.exit <- e.cmd.Wait() }()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		cli, err := e.newClient(ctx)
		if err == nil {
			cli.Close()
			return e
		}
		select {
		case werr := <-e.exit:
			e.exit <- werr
			t.Fatalf("private dockerd exited at start (%v):\n%s", werr, e.LogTail(40))
		case <-ctx.Done():
			t.Fatalf("private dockerd did not answer within 60s (%v):\n%s", err, e.LogTail(40))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Client returns a client for the engine, closed in t.Cleanup.
func (e *Engine) Client(t testing.TB) *client.Client {
	t.Helper()
	cli, err := e.newClient(context.Background())
	if err != nil {
		t.Fatalf("private docker engine: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func (e *Engine) newClient(ctx context.Context) (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.WithHost(e.Host), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		cli.Close()
		return nil, err
	}
	return cli, nil
}

// LogTail returns the last n lines of the engine's log.
func (e *Engine) LogTail(n int) string {
	b, _ := os.ReadFile(filepath.Join(e.Root, "dockerd.log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// teardown removes the engine's containers, stops dockerd, kills what it
// left running, unmounts and removes Root. It reports what it could not
// undo.
func (e *Engine) teardown(logf func(string, ...any)) error {
	var errs []error
	if e.cmd != nil && e.cmd.Process != nil {
		select {
		case err := <-e.exit:
			e.exit <- err
			logf("private dockerd had exited: %v\n%s", err, e.LogTail(20))
		default:
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := e.removeContainers(ctx); err != nil {
				logf("private docker engine: removing containers: %v", err)
			}
			cancel()
			_ = e.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-e.exit:
			case <-time.After(30 * time.Second):
				logf("private dockerd did not stop in 30s; killing pid %d", e.cmd.Process.Pid)
				_ = e.cmd.Process.Kill()
				<-e.exit
			}
		}
	}
	errs = append(errs, cleanEngineDir(e.Root))
	return errors.Join(errs...)
}

func (e *Engine) removeContainers(ctx context.Context) error {
	cli, err := e.newClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true})
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range list {
		errs = append(errs, cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}))
	}
	return errors.Join(errs...)
}

// cleanEngineDir kills the processes the engine under root left behind
// (its containerd, by its pid file; shims, whose command line names the
// engine's unique containerd socket under root), unmounts everything under
// root, deepest first, and removes root.
func cleanEngineDir(root string) error {
	if pid := readPid(filepath.Join(root, "exec", "containerd", "containerd.pid")); pid > 0 && cmdlineContains(pid, root) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range processesNaming(root) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	var errs []error
	if err := deleteBridge(root); err != nil {
		errs = append(errs, err)
	}
	for _, m := range mountsUnder(root) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
		}
	}
	if err := os.RemoveAll(root); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// reapStaleEngines tears down the engine directories whose owner process
// no longer runs (a test binary that was killed before its cleanup), after
// stopping their dockerd by its pid file.
func reapStaleEngines(t testing.TB) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), engineDirPrefix+"*"))
	for _, root := range dirs {
		owner := readPid(filepath.Join(root, ownerFile))
		if owner <= 0 || processExists(owner) {
			continue
		}
		if pid := readPid(filepath.Join(root, "dockerd.pid")); pid > 0 && cmdlineContains(pid, root) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if err := cleanEngineDir(root); err != nil {
			t.Logf("stale private docker engine %s: %v", root, err)
		} else {
			t.Logf("removed stale private docker engine %s", root)
		}
	}
}

func findDockerd(bin string) (string, error) {
	if bin != "" {
		return exec.LookPath(bin)
	}
	if p, err := exec.LookPath("dockerd"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/dockerd", "/usr/bin/dockerd"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no dockerd binary on PATH, in /usr/sbin or /usr/bin")
}

// engineEnv is the test's environment without DOCKER_* variables, with the
// system directories on PATH (dockerd runs containerd, runc, docker-init).
func engineEnv() []string {
	var env []string
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "DOCKER_"):
		case strings.HasPrefix(kv, "PATH="):
			path = kv[len("PATH="):] + ":" + path
		default:
			env = append(env, kv)
		}
	}
	return append(env, "PATH="+path)
}

func readPid(file string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func cmdlineContains(pid int, s string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(b), s)
}

// processesNaming returns the pids whose command line contains root.
func processesNaming(root string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if cmdlineContains(pid, root) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// mountsUnder returns the mount points at or under root, deepest first.
func mountsUnder(root string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == root || strings.HasPrefix(mp, root+"/") {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// bridgeFile in an engine's Root names the engine's bridge interface.
const bridgeFile = "bridge"

// createBridge creates an up bridge interface for the engine under root,
// with an address in 172.30.0.0/16 that no other interface has, and records
// its name in root. dockerd needs a bridge of its own: with "--bridge none"
// it would delete the host's docker0, the machine engine's bridge.
func createBridge(root string) (string, error) {
	name := "drvb" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	if len(name) > 15 {
		name = name[:15]
	}
	taken, _ := exec.Command("ip", "-4", "-o", "addr", "show").Output()
	cidr := ""
	for n := 1; n < 255; n++ {
		net := fmt.Sprintf("172.30.%d.", n)
		if !strings.Contains(string(taken), " "+net) {
			cidr = net + "1/24"
			break
		}
	}
	if cidr == "" {
		return "", errors.New("no free /24 in 172.30.0.0/16")
	}
	for _, args := range [][]string{
		{"link", "add", name, "type", "bridge"},
		{"addr", "add", cidr, "dev", name},
		{"link", "set", name, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			_ = exec.Command("ip", "link", "del", name).Run()
			return "", fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(root, bridgeFile), []byte(name), 0o600); err != nil {
		_ = exec.Command("ip", "link", "del", name).Run()
		return "", err
	}
	return name, nil
}

// deleteBridge deletes the bridge interface recorded in root, if any.
func deleteBridge(root string) error {
	b, err := os.ReadFile(filepath.Join(root, bridgeFile))
	if err != nil || len(b) == 0 {
		return nil
	}
	if out, err := exec.Command("ip", "link", "del", string(b)).CombinedOutput(); err != nil && !strings.Contains(string(out), "Cannot find device") {
		return fmt.Errorf("delete bridge %s: %v: %s", b, err, out)
	}
	return nil
}
