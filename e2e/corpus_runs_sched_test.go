package e2e

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// The corpusRuns entries of the files about services, deployments,
// lifecycle, periodic and dispatched jobs, scaling and spreading.

// webRun: a service of three allocations in the file's datacenters, whose
// http check passes on each; the update block's deployment succeeds on
// those checks. nginx is not here: a small server answering the check
// path runs under raw_exec on the file's port.
var webRun = corpusRun{
	prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		httpok := filepath.Join(t.TempDir(), "httpok")
		out, err := exec.Command("go", "build", "-o", httpok, "./testdata/httpok").CombinedOutput()
		require.NoError(t, err, "build httpok: %s", out)
		onRawExec(corpusTask(t, job, "frontend", "nginx"), httpok, "-addr", "127.0.0.1:${NOMAD_HOST_PORT_http}", "-path", "/healthz")
	},
	check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		d := waitDeploymentStatus(t, cc.c, "web", "successful")
		require.Equal(t, 3, d.TaskGroups["frontend"].HealthyAllocs)
		for _, a := range cc.waitAllocs(t, "web", 3, "running", nil) {
			require.Equal(t, cc.nodeIDs["corpus-b"], a.NodeID, "datacenters = [eu-west-1a, eu-west-1b]: only the eu node")
			checks, err := cc.c.Allocations().Checks(a.ID, nil)
			require.NoError(t, err)
			require.Len(t, checks, 1)
			for _, cs := range checks {
				require.Equal(t, "success", cs.Status, "check of %s: %s", a.ID, cs.Output)
			}
		}
	},
}

// lifecycleRun: the prestart task ends before the leader starts, the
// prestart sidecar starts before it, the poststart task after it, and the
// poststop task after the leader and the sidecar ended.
var lifecycleRun = corpusRun{
	prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		for name, script := range map[string]string{
			"migrate":     `log "migrate start"; sleep 0.5; log "migrate end"`,
			"log-shipper": untilStopped("log-shipper"),
			"shop":        untilStopped("shop"),
			// A poststart task starts once the leader's process runs,
			// maybe before its shell logged: it waits half a second.
			"warm-cache": `sleep 0.5; log "warm-cache start"`,
			"deregister": `log "deregister start"`,
		} {
			task := corpusTask(t, job, "shop", name)
			onRawExec(task, "/bin/sh", "-c", lifecycleScript(script))
			task.KillTimeout = new(5 * time.Second)
		}
	},
	check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		allocID := onlyAllocOf(t, cc.c, "shop")
		a, _, err := cc.c.Allocations().Info(allocID, nil)
		require.NoError(t, err)
		cl := agentOf(t, cc, a.NodeID)
		require.Eventually(t, func() bool {
			got, _ := orderLog(t, cl, allocID)
			_, ok := got["warm-cache start"]
			return ok
		}, 60*time.Second, 100*time.Millisecond, "the poststart task runs")
		got, raw := orderLog(t, cl, allocID)
		for _, k := range []string{"migrate end", "log-shipper start", "shop start"} {
			require.Contains(t, got, k, raw)
		}
		require.Less(t, got["migrate end"], got["shop start"], raw)
		require.Less(t, got["log-shipper start"], got["shop start"], raw)
		require.Less(t, got["shop start"], got["warm-cache start"], raw)
		require.NotContains(t, got, "deregister start", "poststop waits for the job to stop:\n%s", raw)

		_, _, err = cc.c.Jobs().Deregister("shop", false, nil)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			a, _, err = cc.c.Allocations().Info(allocID, nil)
			return err == nil && a.ClientStatus == "complete"
		}, 60*time.Second, 100*time.Millisecond, "the stopped allocation completes")
		got, raw = orderLog(t, cl, allocID)
		for _, k := range []string{"deregister start", "shop end", "log-shipper end"} {
			require.Contains(t, got, k, raw)
		}
		require.Less(t, got["shop end"], got["deregister start"], raw)
		require.Less(t, got["log-shipper end"], got["deregister start"], raw)
	},
}

// transcodeRun: a dispatch creates a child job whose task reads the
// payload at dispatch_payload's file and the dispatch meta (the optional
// key defaulted from the job's meta).
var transcodeRun = corpusRun{
	prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		onRawExec(corpusTask(t, job, "transcode", "ffmpeg"), "/bin/sh", "-c",
			`cat "$NOMAD_TASK_DIR/job.json"; echo; echo "input=$NOMAD_META_input profile=$NOMAD_META_profile"`)
	},
	check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		resp, _, err := cc.c.Jobs().Dispatch("transcode", map[string]string{"input": "s3://in/movie.mov"}, []byte(`{"frames":24}`), "", nil)
		require.NoError(t, err)
		child, _, err := cc.c.Jobs().Info(resp.DispatchedJobID, nil)
		require.NoError(t, err)
		require.Equal(t, "transcode", *child.ParentID)
		s := cc.waitAllocs(t, resp.DispatchedJobID, 1, "complete", nil)[0]
		a, _, err := cc.c.Allocations().Info(s.ID, nil)
		require.NoError(t, err)
		logs := taskStdout(t, cc.c, a, "ffmpeg")
		require.Contains(t, logs, `{"frames":24}`)
		require.Contains(t, logs, "input=s3://in/movie.mov profile=1080p")
	},
}

// periodicCronRun: "@hourly" launches next at the top of the hour; a
// forced launch creates a child that completes.
var periodicCronRun = func() corpusRun {
	var registered time.Time
	return corpusRun{
		prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			onRawExec(corpusTask(t, job, "report", "generate"), "/bin/sh", "-c", "echo report generated")
			registered = time.Now()
		},
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			plan, _, err := cc.c.Jobs().Plan(job, false, nil)
			require.NoError(t, err)
			next := plan.NextPeriodicLaunch.UTC()
			require.Contains(t, []time.Time{registered.UTC().Truncate(time.Hour).Add(time.Hour), time.Now().UTC().Truncate(time.Hour).Add(time.Hour)}, next,
				"@hourly launches at the top of the next hour")
			_, _, err = cc.c.Jobs().PeriodicForce("report", nil)
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				stubs, _, err := cc.c.Jobs().List(&api.QueryOptions{Prefix: "report/periodic-"})
				if err != nil || len(stubs) != 1 {
					return false
				}
				allocs, _, err := cc.c.Jobs().Allocations(stubs[0].ID, true, nil)
				return err == nil && len(allocs) == 1 && allocs[0].ClientStatus == "complete"
			}, 60*time.Second, 100*time.Millisecond, "the forced launch runs to completion")
		},
	}
}()

// sysbatchRun: one allocation per eligible node of the file's datacenters
// (only corpus-a is in dc1 or dc2), which completes; its 12 MB of output
// rotate in files of at most 5 MB, the newest 2 kept (the logs block).
var sysbatchRun = corpusRun{
	prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		task := corpusTask(t, job, "prune", "prune")
		require.Equal(t, "root", task.User)
		if os.Geteuid() != 0 {
			task.User = "" // a raw_exec client not run as root cannot switch users
		}
		onRawExec(task, "/bin/sh", "-c", "head -c 12582912 /dev/zero | tr '\\0' x; echo; echo pruned")
	},
	check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		s := cc.waitAllocs(t, "docker-prune", 1, "complete", nil)[0]
		require.Equal(t, cc.nodeIDs["corpus-a"], s.NodeID, "datacenters = [dc1, dc2]")
		a, _, err := cc.c.Allocations().Info(s.ID, nil)
		require.NoError(t, err)
		files, _, err := cc.c.AllocFS().List(a, "alloc/logs", nil)
		require.NoError(t, err)
		var stdout []string
		for _, f := range files {
			if strings.HasPrefix(f.Name, "prune.stdout.") {
				stdout = append(stdout, f.Name)
				require.LessOrEqual(t, f.Size, int64(5<<20), "max_file_size = 5 (MB): %s", f.Name)
			}
		}
		require.Equal(t, []string{"prune.stdout.1", "prune.stdout.2"}, stdout, "max_files = 2: the newest two of three")
		r, err := cc.c.AllocFS().Cat(a, "alloc/logs/prune.stdout.2", nil)
		require.NoError(t, err)
		defer r.Close()
		last, err := io.ReadAll(r)
		require.NoError(t, err)
		require.True(t, strings.HasSuffix(string(last), "\npruned\n"), "the output's end is in the newest file")
	},
}

// localsRun: count, job name, env and service name come from locals
// (referring to each other in any order, across locals blocks).
var localsRun = corpusRun{
	prepare: holdProbe("search", "opensearch"),
	check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		allocs := cc.waitAllocs(t, "search", 4, "running", nil) // local.replicas
		rep := cc.reportOf(t, allocs[0].ID, "opensearch", nil)
		require.Equal(t, "search-prod-eu-central-1", rep.Env["cluster.name"])
		require.Equal(t, "single-node", rep.Env["discovery.type"])
		require.Equal(t, "search-prod-eu-central-1", rep.Env["NOMAD_JOB_NAME"])
	},
}

// scalingRun: the scaling block is the group's policy: listed with its
// bounds, and a scale request within them changes the count while one
// beyond max is refused. memory_max is the task's memory limit.
var scalingRun = corpusRun{
	prepare: holdProbe("api", "api"),
	check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		allocs := cc.waitAllocs(t, "autoscaled-api", 2, "running", nil)
		requireResources(t, cc, allocs[0].ID, "api", 500, 256, 768)
		policies, _, err := cc.c.Scaling().ListPolicies(&api.QueryOptions{Params: map[string]string{"job": "autoscaled-api"}})
		require.NoError(t, err)
		require.Len(t, policies, 1)
		p, _, err := cc.c.Scaling().GetPolicy(policies[0].ID, nil)
		require.NoError(t, err)
		require.Equal(t, int64(2), *p.Min)
		require.Equal(t, int64(20), *p.Max)
		require.True(t, *p.Enabled)
		require.Equal(t, "api", p.Target["Group"])
		// A scale waits for the job's running deployment to end.
		scale := func(n int, why string) error {
			var err error
			require.Eventually(t, func() bool {
				_, _, err = cc.c.Jobs().Scale("autoscaled-api", "api", new(n), why, false, nil, nil)
				return err == nil || !strings.Contains(err.Error(), "active deployment")
			}, 60*time.Second, 200*time.Millisecond, "the deployment ends")
			return err
		}
		require.ErrorContains(t, scale(21, "beyond max"), "greater than scaling policy maximum", "count 21 is above the policy's max")
		require.NoError(t, scale(3, "within bounds"))
		cc.waitAllocs(t, "autoscaled-api", 3, "running", nil)
	},
}

// spreadsRun: ten allocations spread evenly over the racks (the job-level
// targets name datacenters no node is in, so they weigh the same on every
// node). corpus-a and corpus-b share rack r2: spreading by node alone would
// put four there.
var spreadsRun = corpusRun{
	prepare: holdProbeProcess("frontend", "frontend"), // ten of them: processes, not containers
	check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		allocs := cc.waitAllocs(t, "frontend", 10, "running", nil)
		racks := map[string]int{}
		for _, a := range allocs {
			racks[corpusNodeOf(t, cc, a.NodeID).meta["rack"]]++
		}
		for _, rack := range []string{"r1", "r2", "r3", "r4"} {
			require.Contains(t, []int{2, 3}, racks[rack], "rack %s: %v (nodes %v)", rack, racks, sortedNodes(t, cc, allocs))
		}
	},
}

// nodeExporterRun: a system job runs once on every node ("*"), with host
// networking, the host's root mounted read-only and the static port.
var nodeExporterRun = corpusRun{
	prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		task := corpusTask(t, job, "exporter", "node-exporter")
		cc.probe(task, "hold")
		// This engine's root is not a shared mount, so it refuses the
		// rslave propagation ("path / is mounted on / but it is not a
		// shared or slave mount"): the root is bound read-only without it.
		require.Equal(t, []string{"/:/host:ro,rslave"}, stringsOf(task.Config["volumes"]))
		task.Config["volumes"] = []string{"/:/host:ro"}
	},
	check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		allocs := cc.waitAllocs(t, "node-exporter", len(corpusNodes), "running", nil)
		var nodes []string
		for _, a := range allocs {
			nodes = append(nodes, corpusNodeOf(t, cc, a.NodeID).name)
			ins := cc.inspect(t, a.ID, "node-exporter")
			require.Equal(t, "host", string(ins.HostConfig.NetworkMode))
			require.True(t, slices.ContainsFunc(ins.Mounts, func(m container.MountPoint) bool {
				return m.Source == "/" && m.Destination == "/host" && !m.RW
			}), "the host's root at /host, read-only: %+v", ins.Mounts)
			rep := cc.reportOf(t, a.ID, "node-exporter", nil)
			require.Equal(t, []string{"--path.rootfs=/host"}, rep.Args)
			require.Equal(t, "9100", rep.Env["NOMAD_PORT_metrics"])
		}
		slices.Sort(nodes)
		require.Len(t, slices.Compact(nodes), len(corpusNodes), "one per node")
		got, _, err := cc.c.Jobs().Info("node-exporter", nil)
		require.NoError(t, err)
		require.Equal(t, 80, *got.Priority)
	},
}

// taskServiceRun: the task's http check on /metrics passes (the probe
// image's server answers it on the port), and the task sees group and
// task meta.
var taskServiceRun = corpusRun{
	prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		task := corpusTask(t, job, "g", "exporter")
		task.Config["image"] = cc.image
		task.Env = map[string]string{"PORT": "${NOMAD_PORT_metrics}", "PROBE_REPORT": "1"}
	},
	check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		a := cc.waitAllocs(t, "legacy-metrics", 1, "running", nil)[0]
		rep := cc.reportOf(t, a.ID, "exporter", nil)
		require.Equal(t, "true", rep.Env["NOMAD_META_scrape"])
		require.Equal(t, "sre", rep.Env["NOMAD_META_owner"])
		require.Eventually(t, func() bool {
			checks, err := cc.c.Allocations().Checks(a.ID, nil)
			if err != nil || len(checks) != 1 {
				return false
			}
			for _, cs := range checks {
				return cs.Status == "success"
			}
			return false
		}, 60*time.Second, 200*time.Millisecond, "the http check on /metrics passes")
	},
}

// updateCanaryRun: in region eu and namespace shop, the first version's
// six allocations become healthy (min_healthy_time 15s); a new version
// places the group's one canary beside them and, once healthy, promotes it
// (auto_promote).
var updateCanaryRun = corpusRun{
	prepare: holdProbeProcess("web", "web"), // six, then more: processes, not containers
	check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		q := &api.QueryOptions{Namespace: "shop"}
		waitDeploy := func(version uint64, what string, ok func(*api.Deployment) bool) *api.Deployment {
			t.Helper()
			var d *api.Deployment
			require.Eventually(t, func() bool {
				var err error
				d, _, err = cc.c.Jobs().LatestDeployment("checkout-web", q)
				return err == nil && d != nil && d.JobVersion == version && ok(d)
			}, 90*time.Second, 200*time.Millisecond, "version %d: %s", version, what)
			return d
		}
		d := waitDeploy(0, "successful", func(d *api.Deployment) bool { return d.Status == "successful" })
		require.Equal(t, 6, d.TaskGroups["web"].HealthyAllocs)
		v0 := cc.waitAllocs(t, "checkout-web", 6, "running", q)
		got, _, err := cc.c.Jobs().Info("checkout-web", q)
		require.NoError(t, err)
		require.Equal(t, "eu", *got.Region)

		corpusTask(t, job, "web", "web").Env = map[string]string{"ROLLOUT": "2"}
		cc.register(t, job)
		d = waitDeploy(1, "one canary placed", func(d *api.Deployment) bool { return len(d.TaskGroups["web"].PlacedCanaries) == 1 })
		require.Equal(t, 1, d.TaskGroups["web"].DesiredCanaries, "the group's canary = 1 over the job's 2")
		if !d.TaskGroups["web"].Promoted {
			running := 0
			for _, a := range v0 {
				if s, _, err := cc.c.Allocations().Info(a.ID, q); err == nil && s.ClientStatus == "running" && s.DesiredStatus == "run" {
					running++
				}
			}
			require.Equal(t, 6, running, "the old version keeps running beside the unpromoted canary")
		}
		waitDeploy(1, "auto-promoted", func(d *api.Deployment) bool { return d.TaskGroups["web"].Promoted })
	},
}
