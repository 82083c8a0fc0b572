package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	dockerclient "github.com/docker/docker/client"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/jobspec"
	"github.com/drover-project/drover/testutil/images"
	"github.com/drover-project/drover/testutil/registry"
)

// corpusDir is jobspec's corpus of job files written the way operators
// write them; each that parses has the server's verdict in name.verdict.
var corpusDir = filepath.Join("..", "jobspec", "testdata", "corpus")

// corpusRun is how TestCorpusJobsRunAsTheirBlocksSay runs one accepted
// corpus file: prepare rewrites what cannot run here as written (the
// programs and images the files name are not on a CI machine; the blocks
// under test do not depend on them), check asserts what the file's blocks
// say happens. A file that cannot run here at all has a reason instead.
type corpusRun struct {
	// first registers the job before all others and waits for its
	// placement (placement scores that the other jobs' load would blur).
	first   bool
	prepare func(t *testing.T, cc *corpusCluster, job *api.Job)
	check   func(t *testing.T, cc *corpusCluster, job *api.Job)
	reason  string
}

// corpusVerdict is the outcome line ("accepted" or "refused") of a
// corpus file's .verdict.
func corpusVerdict(t *testing.T, name string) string {
	t.Helper()
	verdict, err := os.ReadFile(filepath.Join(corpusDir, name+".verdict"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(verdict), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			return line
		}
	}
	return ""
}

// acceptedCorpusFiles lists the corpus files whose verdict is "accepted".
func acceptedCorpusFiles(t *testing.T) []string {
	t.Helper()
	verdicts, err := filepath.Glob(filepath.Join(corpusDir, "*.verdict"))
	require.NoError(t, err)
	var names []string
	for _, v := range verdicts {
		name := strings.TrimSuffix(filepath.Base(v), ".verdict")
		if corpusVerdict(t, name) == "accepted" {
			names = append(names, name)
		}
	}
	require.NotEmpty(t, names)
	return names
}

// TestCorpusEveryAcceptedFileRuns fails when an accepted corpus file has no
// entry in corpusRuns (so a file that becomes accepted cannot go unrun),
// when an entry names a file that is not accepted, and when an entry
// neither runs nor says why it cannot.
func TestCorpusEveryAcceptedFileRuns(t *testing.T) {
	accepted := acceptedCorpusFiles(t)
	for _, name := range accepted {
		run, ok := corpusRuns[name]
		if !assertTrue(t, ok, "%s.verdict is accepted but corpusRuns has no entry for it: add one that runs it and asserts what its blocks say", name) {
			continue
		}
		if run.reason != "" {
			require.Nil(t, run.check, "%s: an entry that cannot run has no check", name)
			continue
		}
		require.NotNil(t, run.check, "%s: an entry runs and checks, or says why it cannot", name)
	}
	for name := range corpusRuns {
		require.Contains(t, accepted, name, "corpusRuns has an entry for %s, which is not an accepted corpus file", name)
	}
}

func assertTrue(t *testing.T, ok bool, msg string, args ...any) bool {
	t.Helper()
	if !ok {
		t.Errorf(msg, args...)
	}
	return ok
}

// corpusJob parses the corpus file name as `nomad job run` does, with the
// variables of its name.options.json, from the corpus directory (file()
// paths are relative to it), after checking that its verdict is
// "accepted": what runs here is what the server registers.
func corpusJob(t *testing.T, name string) *api.Job {
	t.Helper()
	require.Equal(t, "accepted", corpusVerdict(t, name), "%s.verdict", name)
	opts := jobspec.Options{Strict: true}
	if raw, err := os.ReadFile(filepath.Join(corpusDir, name+".options.json")); err == nil {
		require.NoError(t, json.Unmarshal(raw, &opts), "%s.options.json", name)
	}
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.NoError(t, os.Chdir(corpusDir))
	job, err := jobspec.ParseFile(name+".nomad.hcl", opts)
	require.NoError(t, os.Chdir(wd))
	require.NoError(t, err)
	return job
}

// onRawExec makes task run command with args under raw_exec, keeping every
// other setting of the corpus file (lifecycle, resources, services, env,
// dispatch_payload, user, ...).
func onRawExec(task *api.Task, command string, args ...string) {
	task.Driver = "raw_exec"
	task.Config = map[string]any{"command": command, "args": args}
}

func corpusTask(t *testing.T, job *api.Job, group, task string) *api.Task {
	t.Helper()
	for _, tg := range job.TaskGroups {
		if *tg.Name != group {
			continue
		}
		for _, tk := range tg.Tasks {
			if tk.Name == task {
				return tk
			}
		}
	}
	t.Fatalf("job %s has no task %s.%s", *job.ID, group, task)
	return nil
}

// corpusCluster is one server (region "eu", namespace "shop" created: the
// corpus names them) and five clients with raw_exec and Docker, each in a
// datacenter some corpus file names, with node classes and meta the
// affinity, spread and constraint files test against. Docker tasks run the
// probe image from an in-process registry.
type corpusCluster struct {
	srv      *agentProc
	c        *api.Client
	clients  map[string]*agentProc // by node name
	nodeIDs  map[string]string     // node name -> node ID
	probeBin string                // the probe, for raw_exec tasks
	image    string                // the probe image reference
	pushed   []string              // its references, to remove at cleanup
	uniq     string                // prefix of Docker objects this run creates
	subnets  map[string]string     // node name -> its bridge_network_subnet
	volumes  map[string]string     // host_volume name -> path (on corpusVolumeNode)
	private  string                // the address of host network "private" (on corpusHostNetNode)
}

// corpusHostNetNode is the one client with host network "private" (which
// network-bridge names), an address of a device of the run's own.
const corpusHostNetNode = "corpus-a"

// corpusVolumeNode is the one client with the host volumes volumes-host
// names ("pgdata", "tls-certs"), both offered read-write (read-only is the
// file's to ask).
const corpusVolumeNode = "corpus-e"

// corpusNode is one client of the corpus cluster.
type corpusNode struct {
	name, dc, class string
	meta            map[string]string
}

// corpusNodes: three nodes meet the affinities file's preferences (disks
// ssd and nvme, class mem-*), two do not (corpus-d is in rack r1, which it
// repels); corpus-a and corpus-b share rack r2.
var corpusNodes = []corpusNode{
	{"corpus-a", "dc1", "mem-a", map[string]string{"rack": "r2", "disks": "ssd,nvme"}},
	{"corpus-b", "eu-west-1a", "mem-b", map[string]string{"rack": "r2", "disks": "nvme,ssd"}},
	{"corpus-c", "n2", "mem-c", map[string]string{"rack": "r3", "disks": "ssd,nvme,hdd"}},
	{"corpus-d", "dc-a", "", map[string]string{"rack": "r1", "disks": "hdd"}},
	{"corpus-e", "prod-b", "", map[string]string{"rack": "r4"}},
}

// corpusPortBase puts client i's dynamic ports in [24000+200*i, +99]
// (24000 to 24899), apart from the other Docker suites' ranges and below
// the kernel's ephemeral ports.
const corpusPortBase = 24000

func newCorpusCluster(t *testing.T) *corpusCluster {
	t.Helper()
	requireDocker(t)
	cc := &corpusCluster{clients: map[string]*agentProc{}, nodeIDs: map[string]string{}, uniq: fmt.Sprintf("corpus%d", time.Now().UnixNano()),
		subnets: map[string]string{}, volumes: map[string]string{"pgdata": t.TempDir(), "tls-certs": t.TempDir()}}
	require.NoError(t, os.WriteFile(filepath.Join(cc.volumes["tls-certs"], "server.crt"), []byte("corpus cert\n"), 0o644))
	// Each client has a bridge and subnet of this run's own (10.213.X.0/24,
	// apart from TestBridgeNetworking's 10.214/16), removed with their IPAM
	// state once the clients are gone (this cleanup runs after theirs).
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	bridges := make([]string, len(corpusNodes))
	for i := range corpusNodes {
		bridges[i] = fmt.Sprintf("drvc%s%d", hex.EncodeToString(rnd[:3]), i)
	}
	t.Cleanup(func() {
		for _, b := range bridges {
			_ = exec.Command("ip", "link", "del", b).Run()
			_ = os.RemoveAll("/var/lib/cni/networks/" + b)
		}
	})
	hnDev := fmt.Sprintf("drvc%shn", hex.EncodeToString(rnd[:3]))
	cc.private = fmt.Sprintf("10.219.%d.1", rnd[3])
	for _, args := range [][]string{{"link", "add", hnDev, "type", "bridge"}, {"addr", "add", cc.private + "/32", "dev", hnDev}, {"link", "set", hnDev, "up"}} {
		if os.Geteuid() != 0 {
			break // a client that is not root runs no bridge-mode group
		}
		out, err := exec.Command("ip", args...).CombinedOutput()
		if args[1] == "add" && args[0] == "link" {
			t.Cleanup(func() { _ = exec.Command("ip", "link", "del", hnDev).Run() })
		}
		require.NoError(t, err, "ip %v: %s", args, out)
	}
	cc.probeBin = filepath.Join(t.TempDir(), "probe")
	out, err := exec.Command("go", "build", "-o", cc.probeBin, "../testutil/images/webserver").CombinedOutput()
	require.NoError(t, err, "build the probe: %s", out)

	reg := registry.Start(t, registry.Options{})
	img, err := images.Build(images.BuildOptions{Version: "corpus"})
	require.NoError(t, err)
	cc.image = reg.Ref("drover-e2e/"+cc.uniq, "probe")
	digest, err := images.Push(img, cc.image)
	require.NoError(t, err)
	cc.pushed = []string{cc.image, cc.image + "@" + digest} // the engine knows it by digest (pinned)

	cc.srv = newServer(t, serverSpec{name: "server", bootstrapExpect: 1, top: `region = "eu"`})
	waitLeader(t, cc.srv)
	cc.c = cc.srv.client(t)
	_, err = cc.c.Namespaces().Register(&api.Namespace{Name: "shop"}, nil)
	require.NoError(t, err)
	for i, n := range corpusNodes {
		var meta strings.Builder
		for k, v := range n.meta {
			fmt.Fprintf(&meta, "    %s = %q\n", k, v)
		}
		minPort := corpusPortBase + 200*i
		cc.subnets[n.name] = fmt.Sprintf("10.213.%d.0/24", int(rnd[3])%50*len(corpusNodes)+i)
		clientExtra := fmt.Sprintf("node_class = %q\n  min_dynamic_port = %d\n  max_dynamic_port = %d\n  meta {\n%s  }\n"+
			"  cni_path = \"/usr/lib/cni\"\n  bridge_network_name = %q\n  bridge_network_subnet = %q\n",
			n.class, minPort, minPort+99, meta.String(), bridges[i], cc.subnets[n.name])
		if n.name == corpusHostNetNode {
			clientExtra += fmt.Sprintf("  host_network \"private\" {\n    cidr = \"%s/32\"\n  }\n", cc.private)
		}
		if n.name == corpusVolumeNode {
			for _, name := range slices.Sorted(maps.Keys(cc.volumes)) {
				clientExtra += fmt.Sprintf("  host_volume %q {\n    path = %q\n  }\n", name, cc.volumes[name])
			}
		}
		top := fmt.Sprintf(`region = "eu"
datacenter = %q
plugin "docker" {
  config {
    image_delay = "2s"
    volumes {
      enabled = true
    }
    allow_caps = ["audit_write", "chown", "dac_override", "fowner", "fsetid", "kill", "mknod", "net_bind_service", "setfcap", "setgid", "setpcap", "setuid", "sys_chroot", "net_raw"]
  }
}`, n.dc)
		cc.clients[n.name] = newClientAgentWith(t, n.name, clientExtra, top, cc.srv.httpHostPort())
	}
	waitReadyNodes(t, cc.c, len(corpusNodes))
	for _, n := range corpusNodes {
		cc.nodeIDs[n.name] = nodeIDOf(t, cc.c, n.name)
	}
	t.Cleanup(func() { cc.cleanup(t) })
	return cc
}

// cleanup stops every job and removes what Docker holds of this run (runs
// before the agents are killed).
func (cc *corpusCluster) cleanup(t *testing.T) {
	var allocIDs []string
	for _, ns := range []string{"default", "shop"} {
		q := &api.QueryOptions{Namespace: ns}
		jobs, _, _ := cc.c.Jobs().List(q)
		for _, j := range jobs {
			stubs, _, _ := cc.c.Jobs().Allocations(j.ID, true, q)
			for _, s := range stubs {
				allocIDs = append(allocIDs, s.ID)
			}
			_, _, _ = cc.c.Jobs().Deregister(j.ID, true, &api.WriteOptions{Namespace: ns})
		}
	}
	// The clients tear down the bridge networks of the stopped allocations
	// (namespace, veth, iptables rules, pause container) before they are
	// killed (a client that is not root makes none).
	gone := func() bool { return os.Geteuid() != 0 || cc.networksLeft(t, allocIDs) == "" }
	deadline := time.Now().Add(60 * time.Second)
	for !gone() && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if !gone() {
		t.Errorf("the networks of the stopped allocations were not removed within 60s: %s", cc.networksLeft(t, allocIDs))
	}
	removeAllocContainers(t, allocIDs)
	removeImages(t, cc.pushed)
	removePauseImages(t)
	if d, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation()); err == nil {
		_ = d.VolumeRemove(context.Background(), cc.uniq+"-agent-wal", true)
		_ = d.Close()
	}
}

// networksLeft names what is left of the bridge networks of allocIDs on
// the corpus clients: namespace files, iptables rules, pause containers
// ("" when nothing is).
func (cc *corpusCluster) networksLeft(t *testing.T, allocIDs []string) string {
	rules := iptablesRules(t)
	pause := map[string]bool{}
	if d, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation()); err == nil {
		list, _ := d.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", "drover.pause"))})
		for _, c := range list {
			pause[c.Labels["drover.alloc_id"]] = true
		}
		_ = d.Close()
	}
	var left []string
	for _, id := range allocIDs {
		for name, cl := range cc.clients {
			if _, err := os.Stat(filepath.Join(cl.dataDir, "netns", id)); !os.IsNotExist(err) {
				left = append(left, "namespace of "+id+" on "+name)
			}
		}
		if strings.Contains(rules, id) {
			left = append(left, "iptables rules of "+id)
		}
		if pause[id] {
			left = append(left, "pause container of "+id)
		}
	}
	return strings.Join(left, ", ")
}

// probe makes task run the probe in mode "report" (print what the task
// got, exit) or "hold" (print, then run until stopped), keeping the rest of
// its config: a Docker task runs the probe image with the probe as
// entrypoint (its args follow); another task runs the probe under
// raw_exec, its args after the mode. show are files whose content the
// probe prints.
func (cc *corpusCluster) probe(task *api.Task, mode string, show ...string) {
	if task.Driver == "docker" {
		task.Config["image"] = cc.image
		task.Config["entrypoint"] = []string{"/server", "probe", mode}
		delete(task.Config, "command")
	} else {
		onRawExec(task, cc.probeBin, append([]string{"probe", mode}, stringsOf(task.Config["args"])...)...)
	}
	if len(show) > 0 {
		if task.Env == nil {
			task.Env = map[string]string{}
		}
		task.Env["PROBE_SHOW"] = strings.Join(show, ":")
	}
}

// probeReport is what the probe printed.
type probeReport struct {
	Env      map[string]string `json:"env"`
	Args     []string          `json:"args"`
	Hostname string            `json:"hostname"`
	NoFile   string            `json:"nofile"`
	Files    map[string]string `json:"files"`
}

// reportOf waits for the probe line in task's stdout of allocation id.
func (cc *corpusCluster) reportOf(t *testing.T, allocID, task string, q *api.QueryOptions) probeReport {
	t.Helper()
	var line string
	require.Eventually(t, func() bool {
		a, _, err := cc.c.Allocations().Info(allocID, q)
		if err != nil {
			return false
		}
		r, err := cc.c.AllocFS().Cat(a, filepath.Join("alloc", "logs", task+".stdout.0"), q)
		if err != nil {
			return false
		}
		defer r.Close()
		b, _ := io.ReadAll(r)
		for _, l := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(l, "PROBE "); ok {
				line = rest
				return true
			}
		}
		return false
	}, 90*time.Second, 200*time.Millisecond, "the probe of task %s of %s reports", task, allocID)
	var rep probeReport
	require.NoError(t, json.Unmarshal([]byte(line), &rep))
	return rep
}

// waitAllocs waits until job has n allocations that want to run and are
// all in status, and returns them.
func (cc *corpusCluster) waitAllocs(t *testing.T, jobID string, n int, status string, q *api.QueryOptions) []*api.AllocationListStub {
	t.Helper()
	var live []*api.AllocationListStub
	deadline := time.Now().Add(90 * time.Second)
	for {
		stubs, _, err := cc.c.Jobs().Allocations(jobID, true, q)
		if err == nil {
			live = live[:0]
			for _, s := range stubs {
				if s.DesiredStatus == "run" {
					live = append(live, s)
				}
			}
			if len(live) == n && !slices.ContainsFunc(live, func(s *api.AllocationListStub) bool { return s.ClientStatus != status }) {
				return live
			}
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, s := range stubs {
				fmt.Fprintf(&b, "\n%s on %s: %s/%s %s", s.ID, s.NodeName, s.DesiredStatus, s.ClientStatus, s.ClientDescription)
				for task, ts := range s.TaskStates {
					if a, _, err := cc.c.Allocations().Info(s.ID, q); err == nil {
						if r, err := cc.c.AllocFS().Cat(a, filepath.Join("alloc", "logs", task+".stderr.0"), q); err == nil {
							out, _ := io.ReadAll(r)
							r.Close()
							fmt.Fprintf(&b, "\n  %s stderr: %s", task, lastLines(string(out), 5))
						}
					}
					for _, e := range ts.Events {
						fmt.Fprintf(&b, "\n  %s: %s: %s %s%s%s", task, e.Type, e.DisplayMessage, e.DriverError, e.SetupError, e.Message)
					}
				}
			}
			for _, s := range stubs {
				for _, cl := range cc.clients {
					var lines []string
					for _, l := range strings.Split(cl.logs(), "\n") {
						if strings.Contains(l, s.ID) && (strings.Contains(l, "ERROR") || strings.Contains(l, "WARN")) {
							lines = append(lines, l)
						}
					}
					fmt.Fprintf(&b, "\n%s", lastLines(strings.Join(lines, "\n"), 3))
				}
			}
			t.Fatalf("%s: not %d allocations %s within 90s:%s", jobID, n, status, b.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// blockedMetrics waits for job's blocked evaluation and returns the
// failed placement metric of group.
func (cc *corpusCluster) blockedMetrics(t *testing.T, jobID, group string) *api.AllocationMetric {
	t.Helper()
	var m *api.AllocationMetric
	require.Eventually(t, func() bool {
		evals, _, err := cc.c.Jobs().Evaluations(jobID, nil)
		if err != nil {
			return false
		}
		for _, e := range evals {
			if e.Status == "complete" && e.FailedTGAllocs[group] != nil {
				m = e.FailedTGAllocs[group]
				return true
			}
		}
		return false
	}, 60*time.Second, 200*time.Millisecond, "%s: a placement of %s fails", jobID, group)
	return m
}

// inspect returns the container of task in allocation allocID.
func (cc *corpusCluster) inspect(t *testing.T, allocID, task string) container.InspectResponse {
	t.Helper()
	d, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation())
	require.NoError(t, err)
	defer d.Close()
	list, err := d.ContainerList(context.Background(), container.ListOptions{All: true})
	require.NoError(t, err)
	for _, ct := range list {
		if ct.Labels["drover.alloc_id"] == allocID && ct.Labels["drover.task_name"] == task {
			ins, err := d.ContainerInspect(context.Background(), ct.ID)
			require.NoError(t, err)
			return ins
		}
	}
	t.Fatalf("no container of task %s of allocation %s", task, allocID)
	return container.InspectResponse{}
}

// TestCorpusJobsRunAsTheirBlocksSay registers every accepted corpus file
// (corpusRuns) on one cluster, side by side, and checks each does what its
// blocks say. DROVER_CORPUS_ONLY=name,... runs only those files.
func TestCorpusJobsRunAsTheirBlocksSay(t *testing.T) {
	cc := newCorpusCluster(t)
	names := acceptedCorpusFiles(t)
	if only := os.Getenv("DROVER_CORPUS_ONLY"); only != "" {
		// While working on some files: DROVER_CORPUS_ONLY=a,b runs those.
		names = slices.DeleteFunc(names, func(n string) bool { return !slices.Contains(strings.Split(only, ","), n) })
	}
	jobs := map[string]*api.Job{}
	var order []string
	for _, name := range names {
		run, ok := corpusRuns[name]
		require.True(t, ok, "%s has no entry in corpusRuns", name)
		if run.reason != "" {
			t.Logf("%s does not run here: %s", name, run.reason)
			continue
		}
		job := corpusJob(t, name)
		if run.prepare != nil {
			run.prepare(t, cc, job)
		}
		jobs[name] = job
		if run.first {
			order = append([]string{name}, order...)
		} else {
			order = append(order, name)
		}
	}
	for _, name := range order {
		cc.register(t, jobs[name])
		if corpusRuns[name].first {
			cc.waitAllocs(t, *jobs[name].ID, 1, "running", nil)
		}
	}
	t.Run("files", func(t *testing.T) {
		for _, name := range order {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				corpusRuns[name].check(t, cc, jobs[name])
			})
		}
	})
}

// register submits job and requires it accepted without warnings.
func (cc *corpusCluster) register(t *testing.T, job *api.Job) {
	t.Helper()
	var w *api.WriteOptions
	if job.Namespace != nil {
		w = &api.WriteOptions{Namespace: *job.Namespace}
	}
	resp, _, err := cc.c.Jobs().Register(job, w)
	require.NoError(t, err, *job.ID)
	require.Empty(t, resp.Warnings, *job.ID)
}

// nextDaily is the first hour:minute in loc after now.
func nextDaily(now time.Time, hour, minute int, loc *time.Location) time.Time {
	n := now.In(loc)
	at := time.Date(n.Year(), n.Month(), n.Day(), hour, minute, 0, 0, loc)
	if !at.After(n) {
		at = time.Date(n.Year(), n.Month(), n.Day()+1, hour, minute, 0, 0, loc)
	}
	return at
}

// taskStdout reads a task's whole stdout through the client API.
func taskStdout(t *testing.T, c *api.Client, a *api.Allocation, task string) string {
	t.Helper()
	r, err := c.AllocFS().Cat(a, filepath.Join("alloc", "logs", task+".stdout.0"), nil)
	require.NoError(t, err)
	defer r.Close()
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	return string(b)
}
