package e2e

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/jobspec"
)

// corpusDir is jobspec's corpus of job files written the way operators
// write them; each that parses has the server's verdict in name.verdict.
var corpusDir = filepath.Join("..", "jobspec", "testdata", "corpus")

// corpusJob parses the corpus file name as `nomad job run` does, after
// checking that its curated verdict is "accepted": what runs here is what
// the server registers.
func corpusJob(t *testing.T, name string) *api.Job {
	t.Helper()
	verdict, err := os.ReadFile(filepath.Join(corpusDir, name+".verdict"))
	require.NoError(t, err)
	outcome := ""
	for _, line := range strings.Split(string(verdict), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			outcome = line
			break
		}
	}
	require.Equal(t, "accepted", outcome, "%s.verdict", name)
	job, err := jobspec.ParseFile(filepath.Join(corpusDir, name+".nomad.hcl"), jobspec.Options{Strict: true})
	require.NoError(t, err)
	return job
}

// onRawExec makes task run command with args under raw_exec, keeping every
// other setting of the corpus file (lifecycle, resources, services, env,
// dispatch_payload, user, ...): the programs the files name (nginx,
// ffmpeg, ...) are not on a CI machine, the blocks under test do not
// depend on them.
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

// TestCorpusJobsRunAsTheirBlocksSay runs accepted corpus job files on one
// server and two raw_exec clients (datacenters dc1 and eu-west-1a) and
// checks what their blocks say happens:
//
//   - web-docker: a service of three allocations in the file's
//     datacenters, whose http check passes on each; the update block's
//     deployment succeeds on those checks. (Drover has no service catalog
//     to read the registrations from yet: /v1/services.)
//   - lifecycle: the prestart task ends before the leader starts, the
//     prestart sidecar starts before it, the poststart task after it, and
//     the poststop task after the leader and the sidecar ended.
//   - parameterized-transcode: a dispatch creates a child job whose task
//     reads the payload at dispatch_payload's file and the dispatch meta
//     (the optional key defaulted from the job's meta).
//   - periodic-cron: "@hourly" launches next at the top of the hour; a
//     forced launch creates a child that completes.
//   - backup-periodic: the cron launches next at 02:30 in its time_zone.
//   - job-level-task: a task outside any group runs in a group of its name
//     and completes with the file's output.
//   - sysbatch-prune: one allocation per eligible node of the file's
//     datacenters (only the dc1 node), which completes.
func TestCorpusJobsRunAsTheirBlocksSay(t *testing.T) {
	httpok := filepath.Join(t.TempDir(), "httpok")
	build := exec.Command("go", "build", "-o", httpok, "./testdata/httpok")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build httpok: %s", out)

	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	dc1 := newClientAgentWith(t, "client-dc1", "", `datacenter = "dc1"`, srv.httpHostPort())
	eu := newClientAgentWith(t, "client-eu", "", `datacenter = "eu-west-1a"`, srv.httpHostPort())
	waitReadyNodes(t, c, 2)
	clients := map[string]*agentProc{nodeIDOf(t, c, "client-dc1"): dc1, nodeIDOf(t, c, "client-eu"): eu}
	register := func(job *api.Job) {
		t.Helper()
		resp, _, err := c.Jobs().Register(job, nil)
		require.NoError(t, err, *job.ID)
		require.Empty(t, resp.Warnings, *job.ID)
	}

	// Register everything first: the jobs run side by side.
	web := corpusJob(t, "web-docker")
	onRawExec(corpusTask(t, web, "frontend", "nginx"), httpok, "-addr", "127.0.0.1:${NOMAD_HOST_PORT_http}", "-path", "/healthz")
	register(web)

	shop := corpusJob(t, "lifecycle")
	for name, script := range map[string]string{
		"migrate":     `log "migrate start"; sleep 0.5; log "migrate end"`,
		"log-shipper": untilStopped("log-shipper"),
		"shop":        untilStopped("shop"),
		// A poststart task starts once the leader's process runs, maybe
		// before its shell logged: it waits half a second (see
		// lifecycleJob).
		"warm-cache": `sleep 0.5; log "warm-cache start"`,
		"deregister": `log "deregister start"`,
	} {
		task := corpusTask(t, shop, "shop", name)
		onRawExec(task, "/bin/sh", "-c", lifecycleScript(script))
		task.KillTimeout = new(5 * time.Second)
	}
	register(shop)

	transcode := corpusJob(t, "parameterized-transcode")
	onRawExec(corpusTask(t, transcode, "transcode", "ffmpeg"), "/bin/sh", "-c",
		`cat "$NOMAD_TASK_DIR/job.json"; echo; echo "input=$NOMAD_META_input profile=$NOMAD_META_profile"`)
	register(transcode)

	report := corpusJob(t, "periodic-cron")
	onRawExec(corpusTask(t, report, "report", "generate"), "/bin/sh", "-c", "echo report generated")
	before := time.Now()
	register(report)
	after := time.Now()

	backup := corpusJob(t, "backup-periodic")
	onRawExec(corpusTask(t, backup, "backup", "dump"), "/bin/sh", "-c", "echo dumped")
	register(backup)

	// The file's own command, under raw_exec instead of exec (which needs
	// an isolating client).
	hello := corpusJob(t, "job-level-task")
	corpusTask(t, hello, "hello", "hello").Driver = "raw_exec"
	register(hello)

	prune := corpusJob(t, "sysbatch-prune")
	pruneTask := corpusTask(t, prune, "prune", "prune")
	require.Equal(t, "root", pruneTask.User)
	if os.Geteuid() != 0 {
		pruneTask.User = "" // a raw_exec client not run as root cannot switch users
	}
	onRawExec(pruneTask, "/bin/sh", "-c", "echo pruned")
	register(prune)

	t.Run("web-docker", func(t *testing.T) {
		d := waitDeploymentStatus(t, c, "web", "successful")
		require.Equal(t, 3, d.TaskGroups["frontend"].HealthyAllocs)
		allocs, _, err := c.Jobs().Allocations("web", false, nil)
		require.NoError(t, err)
		require.Len(t, allocs, 3)
		euID := nodeIDOf(t, c, "client-eu")
		for _, a := range allocs {
			require.Equal(t, "running", a.ClientStatus)
			require.Equal(t, euID, a.NodeID, "datacenters = [eu-west-1a, eu-west-1b]: only the eu node")
			checks, err := c.Allocations().Checks(a.ID, nil)
			require.NoError(t, err)
			require.Len(t, checks, 1)
			for _, cs := range checks {
				require.Equal(t, "success", cs.Status, "check of %s: %s", a.ID, cs.Output)
			}
		}
	})

	t.Run("lifecycle", func(t *testing.T) {
		allocID := onlyAllocOf(t, c, "shop")
		a, _, err := c.Allocations().Info(allocID, nil)
		require.NoError(t, err)
		cl := clients[a.NodeID]
		require.NotNil(t, cl)
		require.Eventually(t, func() bool {
			got, _ := orderLog(t, cl, allocID)
			_, ok := got["warm-cache start"]
			return ok
		}, 30*time.Second, 100*time.Millisecond, "the poststart task runs")
		got, raw := orderLog(t, cl, allocID)
		for _, k := range []string{"migrate end", "log-shipper start", "shop start"} {
			require.Contains(t, got, k, raw)
		}
		require.Less(t, got["migrate end"], got["shop start"], raw)
		require.Less(t, got["log-shipper start"], got["shop start"], raw)
		require.Less(t, got["shop start"], got["warm-cache start"], raw)
		require.NotContains(t, got, "deregister start", "poststop waits for the job to stop:\n%s", raw)

		_, _, err = c.Jobs().Deregister("shop", false, nil)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			a, _, err = c.Allocations().Info(allocID, nil)
			return err == nil && a.ClientStatus == "complete"
		}, 30*time.Second, 100*time.Millisecond, "the stopped allocation completes")
		got, raw = orderLog(t, cl, allocID)
		for _, k := range []string{"deregister start", "shop end", "log-shipper end"} {
			require.Contains(t, got, k, raw)
		}
		require.Less(t, got["shop end"], got["deregister start"], raw)
		require.Less(t, got["log-shipper end"], got["deregister start"], raw)
	})

	t.Run("parameterized-transcode", func(t *testing.T) {
		resp, _, err := c.Jobs().Dispatch("transcode", map[string]string{"input": "s3://in/movie.mov"}, []byte(`{"frames":24}`), "", nil)
		require.NoError(t, err)
		child, _, err := c.Jobs().Info(resp.DispatchedJobID, nil)
		require.NoError(t, err)
		require.Equal(t, "transcode", *child.ParentID)
		allocID := onlyAllocOf(t, c, resp.DispatchedJobID)
		var a *api.Allocation
		require.Eventually(t, func() bool {
			a, _, err = c.Allocations().Info(allocID, nil)
			return err == nil && a.ClientStatus == "complete"
		}, 30*time.Second, 100*time.Millisecond, "the dispatched job completes")
		logs := taskStdout(t, c, a, "ffmpeg")
		require.Contains(t, logs, `{"frames":24}`)
		require.Contains(t, logs, "input=s3://in/movie.mov profile=1080p")
	})

	t.Run("periodic-cron", func(t *testing.T) {
		plan, _, err := c.Jobs().Plan(report, false, nil)
		require.NoError(t, err)
		next := plan.NextPeriodicLaunch.UTC()
		require.Contains(t, []time.Time{before.UTC().Truncate(time.Hour).Add(time.Hour), after.UTC().Truncate(time.Hour).Add(time.Hour)}, next,
			"@hourly launches at the top of the next hour")
		_, _, err = c.Jobs().PeriodicForce("report", nil)
		require.NoError(t, err)
		var childID string
		require.Eventually(t, func() bool {
			stubs, _, err := c.Jobs().List(&api.QueryOptions{Prefix: "report/periodic-"})
			if err != nil || len(stubs) != 1 {
				return false
			}
			childID = stubs[0].ID
			allocs, _, err := c.Jobs().Allocations(childID, true, nil)
			return err == nil && len(allocs) == 1 && allocs[0].ClientStatus == "complete"
		}, 30*time.Second, 100*time.Millisecond, "the forced launch runs to completion")
	})

	t.Run("backup-periodic", func(t *testing.T) {
		plan, _, err := c.Jobs().Plan(backup, false, nil)
		require.NoError(t, err)
		berlin, err := time.LoadLocation("Europe/Berlin")
		require.NoError(t, err)
		require.Equal(t, nextDaily(time.Now(), 2, 30, berlin), plan.NextPeriodicLaunch.In(berlin),
			`crons = ["30 2 * * *"] in time_zone "Europe/Berlin"`)
	})

	t.Run("job-level-task", func(t *testing.T) {
		allocID := onlyAllocOf(t, c, "hello")
		var a *api.Allocation
		require.Eventually(t, func() bool {
			var err error
			a, _, err = c.Allocations().Info(allocID, nil)
			return err == nil && a.ClientStatus == "complete"
		}, 30*time.Second, 100*time.Millisecond, "the batch job completes")
		require.Equal(t, "hello", a.TaskGroup, "a task outside any group gets a group of its name")
		require.Equal(t, "hello world\n", taskStdout(t, c, a, "hello"))
	})

	t.Run("sysbatch-prune", func(t *testing.T) {
		dc1ID := nodeIDOf(t, c, "client-dc1")
		require.Eventually(t, func() bool {
			allocs, _, err := c.Jobs().Allocations("docker-prune", true, nil)
			return err == nil && len(allocs) == 1 && allocs[0].ClientStatus == "complete"
		}, 30*time.Second, 100*time.Millisecond, "one allocation, completed")
		allocs, _, err := c.Jobs().Allocations("docker-prune", true, nil)
		require.NoError(t, err)
		require.Equal(t, dc1ID, allocs[0].NodeID, "datacenters = [dc1, dc2]: not the eu node")
		a, _, err := c.Allocations().Info(allocs[0].ID, nil)
		require.NoError(t, err)
		require.Contains(t, taskStdout(t, c, a, "prune"), "pruned")
	})
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
