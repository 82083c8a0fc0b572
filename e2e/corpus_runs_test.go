package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// corpusRuns has one entry per accepted corpus file (see corpusRun and
// TestCorpusEveryAcceptedFileRuns). Tasks run the probe (which prints the
// environment, arguments and files a task got) unless the entry says
// otherwise; Docker tasks run it from the probe image.
var corpusRuns = map[string]corpusRun{
	"affinities": {
		// Placed first, on empty nodes: the affinities outweigh binpacking.
		// Three of five nodes meet them and a service placement scores
		// three nodes (⌈log2 5⌉), so a scheduler that honours them always
		// picks one; one that ignored them would miss in two runs of five.
		first:   true,
		prepare: holdProbe("redis", "redis"),
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			a := cc.waitAllocs(t, "cache", 1, "running", nil)[0]
			require.Contains(t, []string{cc.nodeIDs["corpus-a"], cc.nodeIDs["corpus-b"], cc.nodeIDs["corpus-c"]}, a.NodeID,
				"meta.disks has ssd and nvme (weight 80) and node.class matches ^mem- (50); not rack r1 (-50)")
		},
	},
	"artifacts-fetch": artifactsFetchRun,
	"backup-periodic": {
		prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			onRawExec(corpusTask(t, job, "backup", "dump"), "/bin/sh", "-c", "echo dumped")
		},
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			plan, _, err := cc.c.Jobs().Plan(job, false, nil)
			require.NoError(t, err)
			berlin, err := time.LoadLocation("Europe/Berlin")
			require.NoError(t, err)
			require.Equal(t, nextDaily(time.Now(), 2, 30, berlin), plan.NextPeriodicLaunch.In(berlin),
				`crons = ["30 2 * * *"] in time_zone "Europe/Berlin"`)
		},
	},
	"constraints": {
		prepare: holdProbe("db", "db"),
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			// No node here is an AWS instance with 8 cores: every node is
			// filtered out by a constraint and nothing runs.
			m := cc.blockedMetrics(t, "db-cluster", "db")
			filtered := 0
			for _, n := range m.ConstraintFiltered {
				filtered += n
			}
			require.Equal(t, len(corpusNodes), filtered, "every node fails a constraint: %v", m.ConstraintFiltered)
			var own []string // the file's constraints as placement names them
			tg := job.TaskGroups[0]
			for _, c := range slices.Concat(job.Constraints, tg.Constraints, tg.Tasks[0].Constraints) {
				own = append(own, fmt.Sprintf("%s %s %s", c.LTarget, c.Operand, c.RTarget))
			}
			for reason := range m.ConstraintFiltered {
				require.Contains(t, own, reason, "nodes are filtered by the file's constraints")
			}
			allocs, _, err := cc.c.Jobs().Allocations("db-cluster", true, nil)
			require.NoError(t, err)
			require.Empty(t, allocs)
		},
	},
	"docker-config": {
		prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			task := corpusTask(t, job, "agent", "agent")
			cc.probe(task, "hold", "/proc/sys/net/core/somaxconn")
			// The file binds local/config.river, which nothing in it
			// writes (no template or artifact): bind the directory that
			// exists. The named volume gets this run's prefix. This
			// engine has no journald: the logging block asks for
			// json-file, with the file's options.
			task.Config["logging"].([]map[string]any)[0]["type"] = "json-file"
			// Nor may this engine raise the open-files limit to 65536 (its
			// own hard limit is lower): the ulimit asks for less.
			ulimit := task.Config["ulimit"].([]map[string]any)[0]
			require.Equal(t, "65536:65536", ulimit["nofile"])
			ulimit["nofile"] = "4096:8192"
			for _, m := range task.Config["mount"].([]map[string]any) {
				switch m["type"] {
				case "bind":
					m["source"] = "local"
				case "volume":
					m["source"] = cc.uniq + "-" + m["source"].(string)
				}
			}
		},
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			a := cc.waitAllocs(t, "grafana-agent", 1, "running", nil)[0]
			rep := cc.reportOf(t, a.ID, "agent", nil)
			require.Equal(t, []string{"run", "/etc/agent/config.river"}, rep.Args, "entrypoint then args")
			require.Equal(t, "agent-0", rep.Hostname)
			// The probe is a Go program: the runtime raises its soft limit
			// at start, the hard one is the container's.
			_, hard, _ := strings.Cut(rep.NoFile, ":")
			require.Equal(t, "8192", hard, "ulimit nofile")
			require.Equal(t, "16384\n", rep.Files["/proc/sys/net/core/somaxconn"], "sysctl")
			ins := cc.inspect(t, a.ID, "agent")
			require.Equal(t, "observability", ins.Config.Labels["com.example.team"])
			require.Equal(t, []string{"127.0.0.1"}, ins.HostConfig.DNS)
			require.Contains(t, ins.HostConfig.CapAdd, "CAP_NET_RAW")
			require.Equal(t, "json-file", ins.HostConfig.LogConfig.Type)
			require.Equal(t, "grafana-agent", ins.HostConfig.LogConfig.Config["tag"])
			var bind, vol bool
			for _, m := range ins.Mounts {
				switch m.Destination {
				case "/etc/agent/config.river":
					bind = m.Type == "bind" && !m.RW
				case "/var/lib/agent":
					vol = m.Type == "volume" && m.Name == cc.uniq+"-agent-wal"
				}
			}
			require.True(t, bind, "a read-only bind mount: %+v", ins.Mounts)
			require.True(t, vol, "the named volume: %+v", ins.Mounts)
			full, _, err := cc.c.Allocations().Info(a.ID, nil)
			require.NoError(t, err)
			port := full.AllocatedResources.Shared.Ports[0]
			require.Equal(t, 12345, port.To)
			require.Equal(t, fmt.Sprint(port.Value), ins.HostConfig.PortBindings["12345/tcp"][0].HostPort, "port http maps to 12345")
		},
	},
	"dynamic-blocks": dynamicBlocksRun,
	"dynamic-nested": dynamicNestedRun,
	"env-vars-only": {
		prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			cc.probe(corpusTask(t, job, "g", "publish"), "report")
		},
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			a := cc.waitAllocs(t, "release-notes", 1, "complete", nil)[0]
			rep := cc.reportOf(t, a.ID, "publish", nil)
			require.Equal(t, "2024.11.3", rep.Env["NOMAD_META_release"], "NOMAD_VAR_release")
			require.Equal(t, "true", rep.Env["NOMAD_META_debug"], "NOMAD_VAR_debug")
			require.Equal(t, []string{"--release", "2024.11.3"}, rep.Args)
		},
	},
	"functions-collections": metaRun("collections", "g", "t", map[string]string{
		"element": "b", "for_expr": "N1,N2", "range": "[1,4,7]", "lookup": "0", "splat": "a,b",
	}, "corpus-c"), // datacenters = sort(distinct(nodes)): n1, n2, n3
	"functions-crypto": metaRun("crypto", "g", "t", map[string]string{
		"md5": "5d41402abc4b2a76b9719d911017c592", "bcrypt_prefix": "$2a$06$", "bcrypt_length": "60",
	}, ""),
	"functions-files": functionsFilesRun,
	"functions-ipnet": functionsIPNetRun,
	"functions-numeric": {
		prepare: holdProbe("g", "t"),
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			allocs := cc.waitAllocs(t, "numeric", 2, "running", nil) // max(1, floor(5 / 2))
			for _, s := range allocs {
				requireResources(t, cc, s.ID, "t", 167, 512, 0) // ceil(500 / 3), pow(2, 9)
			}
			rep := cc.reportOf(t, allocs[0].ID, "t", nil)
			requireMeta(t, rep, job, "g", "t")
			require.Equal(t, "10", rep.Env["NOMAD_META_log"])
			require.Equal(t, "2", rep.Env["NOMAD_META_modulo"])
		},
	},
	"functions-strings": metaRun("strings", "g", "t", map[string]string{
		"format": "worker-007", "regex": "2", "regex_replace": "v2.13.4", "title": "Hello Nomad World", "trimspace": "Billing-API",
	}, ""),
	"functions-uuid-time": metaRun("uuid-time", "g", "t", map[string]string{
		"uuidv4_len": "36", "uuidv4_ver": "4", "timeadd": "2024-03-03T02:05:00Z",
	}, ""),
	"functions-encoding": {
		prepare: holdProbe("g", "t"),
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			a := cc.waitAllocs(t, "encoding", 1, "running", nil)[0]
			rep := cc.reportOf(t, a.ID, "t", nil)
			requireMeta(t, rep, job, "g", "t")
			require.Equal(t, "hello world", rep.Env["NOMAD_META_base64decode"])
			require.Equal(t, "bob", rep.Env["NOMAD_META_csv_second"])
			want := stringsOf(corpusTask(t, job, "g", "t").Config["args"])
			require.NotEmpty(t, want)
			require.Equal(t, want, rep.Args, "args from yamldecode(file(...))")
			task := corpusTask(t, job, "g", "t")
			requireResources(t, cc, a.ID, "t", *task.Resources.CPU, *task.Resources.MemoryMB, 0)
		},
	},
	"heredocs-env": {
		prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			// The script's own program is not here: the probe runs in its
			// place, with the script's arguments.
			task := corpusTask(t, job, "g", "t")
			args := stringsOf(task.Config["args"])
			args[1] = strings.Replace(args[1], "/usr/local/bin/app", cc.probeBin+" probe hold", 1)
			// The group has no port "http": Drover leaves the reference to
			// the shell, whose set -u would stop at it.
			args[1] = strings.Replace(args[1], "${NOMAD_PORT_http}", "${NOMAD_PORT_http:-none}", 1)
			task.Config["args"] = args
		},
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			a := cc.waitAllocs(t, "heredocs", 1, "running", nil)[0]
			rep := cc.reportOf(t, a.ID, "t", nil)
			node := corpusNodeOf(t, cc, a.NodeID)
			require.Equal(t, "production", rep.Env["APP_ENV"])
			require.Equal(t, node.dc, rep.Env["DC"], "${node.datacenter}")
			require.Equal(t, node.meta["rack"], rep.Env["RACK"], "${meta.rack}")
			require.Equal(t, "${NOT_INTERPOLATED}", rep.Env["LITERAL"], "$${...} is a literal")
			require.Equal(t, "multi\nline\n", rep.Env["GREETING"], "heredoc")
			require.Equal(t, []string{"--port", "none"}, rep.Args, "the indented heredoc is the script, its last line the exec")
			require.Equal(t, "cc-1042", rep.Env["NOMAD_META_cost_center"])
			require.Equal(t, "platform", rep.Env["NOMAD_META_team_owner"], "a key's dot is an underscore in the variable's name")
			full, _, err := cc.c.Allocations().Info(a.ID, nil)
			require.NoError(t, err)
			host, err := os.Hostname()
			require.NoError(t, err)
			require.Contains(t, taskStdout(t, cc.c, full, "t"), fmt.Sprintf("alloc %s on %s\n", a.ID, host), "the indented heredoc's script ran, interpolated")
		},
	},
	"identity": {
		prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			cc.probe(corpusTask(t, job, "g", "client"), "hold", "/secrets/nomad_token", "/secrets/nomad_aws.jwt", "/secrets/nomad_vault_default.jwt")
		},
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			a := cc.waitAllocs(t, "tokens", 1, "running", nil)[0]
			rep := cc.reportOf(t, a.ID, "client", nil)
			token := rep.Env["NOMAD_TOKEN"]
			require.Equal(t, 3, len(strings.Split(token, ".")), "env = true: the default identity in NOMAD_TOKEN")
			require.Equal(t, token, rep.Files["/secrets/nomad_token"], "file = true")
			aws := rep.Files["/secrets/nomad_aws.jwt"]
			require.NotEmpty(t, aws, `identity "aws" has file = true`)
			var claims struct {
				Aud any   `json:"aud"`
				Iat int64 `json:"iat"`
				Exp int64 `json:"exp"`
			}
			require.NoError(t, json.Unmarshal([]byte(jwtClaims(t, aws)), &claims))
			require.Contains(t, fmt.Sprint(claims.Aud), "sts.amazonaws.com", "aud")
			require.Equal(t, int64(3600), claims.Exp-claims.Iat, `ttl = "1h"`)
			require.Empty(t, rep.Files["/secrets/nomad_vault_default.jwt"], "vault_default has neither file nor env")
		},
	},
	"job-level-task": {
		prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			// The file's own command, under raw_exec instead of exec
			// (which needs an isolating client).
			corpusTask(t, job, "hello", "hello").Driver = "raw_exec"
		},
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			s := cc.waitAllocs(t, "hello", 1, "complete", nil)[0]
			require.Equal(t, "hello", s.TaskGroup, "a task outside any group gets a group of its name")
			a, _, err := cc.c.Allocations().Info(s.ID, nil)
			require.NoError(t, err)
			require.Equal(t, "hello world\n", taskStdout(t, cc.c, a, "hello"))
		},
	},
	"legacy-style": {
		prepare: holdProbe("app", "app"),
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			// One dc1 node: distinct_hosts leaves the second allocation
			// unplaced.
			a := cc.waitAllocs(t, "legacy-app", 1, "running", nil)[0]
			require.Equal(t, cc.nodeIDs["corpus-a"], a.NodeID)
			m := cc.blockedMetrics(t, "legacy-app", "app")
			require.NotEmpty(t, m.ConstraintFiltered, "the node that runs one is filtered out for the other")
			rep := cc.reportOf(t, a.ID, "app", nil)
			require.Equal(t, "8080", rep.Env["NOMAD_PORT_http"], "static port under resources.network")
			require.NotEmpty(t, rep.Env["NOMAD_PORT_rpc"])
			requireResources(t, cc, a.ID, "app", 250, 128, 0)
		},
	},
	"lifecycle":               lifecycleRun,
	"locals":                  localsRun,
	"parameterized-transcode": transcodeRun,
	"periodic-cron":           periodicCronRun,
	"reverse": {
		prepare: holdProbe("g", "t"),
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			a := cc.waitAllocs(t, "reverse", 1, "running", nil)[0]
			require.Equal(t, cc.nodeIDs["corpus-d"], a.NodeID, "datacenters = reverse([dc-b, dc-a])")
			rep := cc.reportOf(t, a.ID, "t", nil)
			require.Equal(t, []string{"third", "second", "first"}, rep.Args)
			requireMeta(t, rep, job, "g", "t")
			require.Equal(t, "revord", rep.Env["NOMAD_META_strrev"])
			require.Equal(t, "com.example.www", rep.Env["NOMAD_META_joined"])
		},
	},
	"scaling":              scalingRun,
	"spreads":              spreadsRun,
	"sysbatch-prune":       sysbatchRun,
	"system-node-exporter": nodeExporterRun,
	"task-service":         taskServiceRun,
	"update-canary":        updateCanaryRun,
	"variables-inputs": {
		prepare: holdProbeProcess("checkout", "checkout"), // seven of them: processes, not containers
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			// -var replicas=7 over the var file's 5 over NOMAD_VAR_replicas=3;
			// datacenters prod-a, prod-b, prod-c from the var file.
			allocs := cc.waitAllocs(t, "checkout", 7, "running", nil)
			for _, a := range allocs {
				require.Equal(t, cc.nodeIDs["corpus-e"], a.NodeID)
			}
			rep := cc.reportOf(t, allocs[0].ID, "checkout", nil)
			require.Equal(t, "debug", rep.Env["LOG_LEVEL"], "NOMAD_VAR_log_level")
			require.Equal(t, "beta-cart,new-tax", rep.Env["FEATURES"], "NOMAD_VAR_features")
		},
	},
	"variables-json-null": {
		prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			require.Equal(t, "nginx:1.27.2", corpusTask(t, job, "site", "nginx").Config["image"], "image_id from the JSON var file")
			cc.probe(corpusTask(t, job, "site", "nginx"), "hold")
		},
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			a := cc.waitAllocs(t, "static-site", 1, "running", nil)[0]
			got, _, err := cc.c.Jobs().Info("static-site", nil)
			require.NoError(t, err)
			require.Equal(t, "default", *got.NodePool, "node_pool = null is the default pool")
			rep := cc.reportOf(t, a.ID, "nginx", nil)
			require.Equal(t, "testing,internal", rep.Env["NOMAD_META_labels"])
			require.Equal(t, "false", rep.Env["NOMAD_META_pool_set"])
		},
	},
	"variables-types": {
		prepare: holdProbe("app", "app"),
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			allocs := cc.waitAllocs(t, "app", 2, "running", nil)
			for _, a := range allocs {
				require.Equal(t, cc.nodeIDs["corpus-a"], a.NodeID, "datacenters dc1, dc2")
				requireResources(t, cc, a.ID, "app", 300, 512, 0)
			}
			rep := cc.reportOf(t, allocs[0].ID, "app", nil)
			require.Equal(t, "checkout", rep.Env["NOMAD_META_team"])
			require.Equal(t, "backend", rep.Env["NOMAD_META_tier"])
		},
	},
	"variables-validation": {
		prepare: holdProbe("inventory", "inventory"),
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			a := cc.waitAllocs(t, "inventory", 1, "running", nil)[0]
			rep := cc.reportOf(t, a.ID, "inventory", nil)
			require.Equal(t, "inventory-staging", rep.Env["NOMAD_JOB_NAME"])
			requireResources(t, cc, a.ID, "inventory", 0, 256, 0)
		},
	},
	"network-bridge": networkBridgeRun,
	"volumes-host":   volumesHostRun,
	"web-docker":     webRun,
}

// holdProbe is the prepare of an entry whose one task runs the probe
// ("hold").
func holdProbe(group, task string) func(*testing.T, *corpusCluster, *api.Job) {
	return func(t *testing.T, cc *corpusCluster, job *api.Job) {
		cc.probe(corpusTask(t, job, group, task), "hold")
	}
}

// holdProbeProcess is holdProbe under raw_exec: for files of many
// allocations whose blocks are the scheduler's, processes start faster
// than containers.
func holdProbeProcess(group, task string) func(*testing.T, *corpusCluster, *api.Job) {
	return func(t *testing.T, cc *corpusCluster, job *api.Job) {
		tk := corpusTask(t, job, group, task)
		tk.Driver = "raw_exec"
		cc.probe(tk, "hold")
	}
}

// metaRun is the entry of a file whose blocks under test are meta values
// computed by HCL functions: the task sees them (NOMAD_META_*), spot values
// are the functions' known results. node, when set, is where the job's
// datacenters put it.
func metaRun(jobID, group, task string, spot map[string]string, node string) corpusRun {
	return corpusRun{
		prepare: holdProbe(group, task),
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			a := cc.waitAllocs(t, jobID, 1, "running", nil)[0]
			if node != "" {
				require.Equal(t, cc.nodeIDs[node], a.NodeID)
			}
			rep := cc.reportOf(t, a.ID, task, nil)
			requireMeta(t, rep, job, group, task)
			for k, v := range spot {
				require.Equal(t, v, rep.Env["NOMAD_META_"+k], k)
			}
		},
	}
}

// requireMeta requires the task saw every meta value of the job, its group
// and itself (the most specific wins) as NOMAD_META_<key>.
func requireMeta(t *testing.T, rep probeReport, job *api.Job, group, task string) {
	t.Helper()
	meta := map[string]string{}
	for k, v := range job.Meta {
		meta[k] = v
	}
	for _, tg := range job.TaskGroups {
		if *tg.Name == group {
			for k, v := range tg.Meta {
				meta[k] = v
			}
		}
	}
	for k, v := range corpusTask(t, job, group, task).Meta {
		meta[k] = v
	}
	require.NotEmpty(t, meta)
	for k, v := range meta {
		require.Equal(t, v, rep.Env["NOMAD_META_"+cleanEnvKey(k)], "meta %s", k)
	}
}

// requireResources requires task's allocated CPU, memory and memory_max
// (0: not checked).
func requireResources(t *testing.T, cc *corpusCluster, allocID, task string, cpu, mem, memMax int) {
	t.Helper()
	a, _, err := cc.c.Allocations().Info(allocID, nil)
	require.NoError(t, err)
	tr := a.AllocatedResources.Tasks[task]
	require.NotNil(t, tr)
	if cpu != 0 {
		require.Equal(t, int64(cpu), tr.Cpu.CpuShares, "cpu")
	}
	if mem != 0 {
		require.Equal(t, int64(mem), tr.Memory.MemoryMB, "memory")
	}
	if memMax != 0 {
		require.Equal(t, int64(memMax), tr.Memory.MemoryMaxMB, "memory_max")
	}
}

func corpusNodeOf(t *testing.T, cc *corpusCluster, nodeID string) corpusNode {
	t.Helper()
	for _, n := range corpusNodes {
		if cc.nodeIDs[n.name] == nodeID {
			return n
		}
	}
	t.Fatalf("node %s is not a corpus node", nodeID)
	return corpusNode{}
}

func agentOf(t *testing.T, cc *corpusCluster, nodeID string) *agentProc {
	t.Helper()
	return cc.clients[corpusNodeOf(t, cc, nodeID).name]
}

// jwtClaims decodes the claims of a JWT.
func jwtClaims(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(strings.TrimSpace(token), ".")
	require.Len(t, parts, 3)
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	require.True(t, json.Valid(b))
	return string(b)
}

// sortedNodes is the node names of allocs, sorted.
func sortedNodes(t *testing.T, cc *corpusCluster, allocs []*api.AllocationListStub) []string {
	var names []string
	for _, a := range allocs {
		names = append(names, corpusNodeOf(t, cc, a.NodeID).name)
	}
	slices.Sort(names)
	return names
}

// stringsOf is a task config's list of strings (as the parser or JSON
// gives it).
func stringsOf(v any) []string {
	switch l := v.(type) {
	case []string:
		return slices.Clone(l)
	case []any:
		out := make([]string, len(l))
		for i, s := range l {
			out[i] = fmt.Sprint(s)
		}
		return out
	}
	return nil
}

// cleanEnvKey is key as a variable name: characters other than letters,
// digits and _ become _.
func cleanEnvKey(key string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, key)
}
