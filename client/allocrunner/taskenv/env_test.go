package taskenv

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func testInput() Input {
	task := &structs.Task{
		Name:      "web",
		Driver:    "mock",
		Resources: &structs.Resources{CPU: 100, MemoryMB: 64},
		Meta:      map[string]string{"tier": "task", "task-only": "t"},
		Env: map[string]string{
			"GREETING":  "hello ${node.unique.name} in ${node.datacenter}",
			"ADDR":      "${NOMAD_ADDR_http}",
			"KERNEL":    "${attr.kernel.name}",
			"RACK":      "${meta.rack}",
			"UNKNOWN":   "${nope.thing}",
			"SELF":      "${GREETING}",
			"NOMAD_DC":  "overridden",
			"META_TIER": "${NOMAD_META_tier}",
		},
	}
	job := &structs.Job{
		ID: "web-job", Name: "web-name", Region: "eu", Namespace: "ops", Type: structs.JobTypeSystem,
		Meta: map[string]string{"tier": "job", "owner": "team-a"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "frontend", Tasks: []*structs.Task{task},
			Meta: map[string]string{"tier": "group", "group.key": "g"},
		}},
	}
	alloc := &structs.Allocation{
		ID: "0123456789abcdef", Name: "web-job.frontend[0]", Namespace: "ops", TaskGroup: "frontend", Job: job,
		AllocatedResources: &structs.AllocatedResources{
			Tasks: map[string]*structs.AllocatedTaskResources{"web": {
				Cpu:    structs.AllocatedCpuResources{CpuShares: 250},
				Memory: structs.AllocatedMemoryResources{MemoryMB: 128, MemoryMaxMB: 256},
			}},
			Shared: structs.AllocatedSharedResources{Ports: []structs.AllocatedPortMapping{
				{Label: "http", Value: 25000, To: 8080},
				{Label: "admin-ui", Value: 25001, To: 25001, HostIP: "10.1.2.3"},
				{Label: "raw", Value: 25002},
			}},
		},
	}
	node := &structs.Node{
		ID: "node-id", Name: "node-1", Datacenter: "dc1", NodeClass: "edge", NodePool: "default",
		Attributes: map[string]string{"kernel.name": "linux", NodeIPAttribute: "192.168.0.7"},
		Meta:       map[string]string{"rack": "r42"},
	}
	return Input{
		Alloc: alloc, Task: task, Node: node,
		AllocDir: "/data/a/alloc", TaskDir: "/data/a/web", LocalDir: "/data/a/web/local", SecretsDir: "/data/a/web/secrets",
	}
}

func TestBuild(t *testing.T) {
	env := Build(testInput()).Map()
	want := map[string]string{
		"NOMAD_ALLOC_ID":         "0123456789abcdef",
		"NOMAD_SHORT_ALLOC_ID":   "01234567",
		"NOMAD_ALLOC_NAME":       "web-job.frontend[0]",
		"NOMAD_ALLOC_INDEX":      "0",
		"NOMAD_ALLOC_DIR":        "/data/a/alloc",
		"NOMAD_TASK_DIR":         "/data/a/web/local",
		"NOMAD_SECRETS_DIR":      "/data/a/web/secrets",
		"NOMAD_TASK_NAME":        "web",
		"NOMAD_GROUP_NAME":       "frontend",
		"NOMAD_JOB_ID":           "web-job",
		"NOMAD_JOB_NAME":         "web-name",
		"NOMAD_NAMESPACE":        "ops",
		"NOMAD_REGION":           "eu",
		"NOMAD_CPU_LIMIT":        "250",
		"NOMAD_MEMORY_LIMIT":     "128",
		"NOMAD_MEMORY_MAX_LIMIT": "256",

		"NOMAD_IP_http":        "192.168.0.7",
		"NOMAD_HOST_IP_http":   "192.168.0.7",
		"NOMAD_PORT_http":      "8080",
		"NOMAD_HOST_PORT_http": "25000",
		"NOMAD_ADDR_http":      "192.168.0.7:25000",
		"NOMAD_HOST_ADDR_http": "192.168.0.7:25000",

		"NOMAD_IP_admin_ui":        "10.1.2.3",
		"NOMAD_HOST_IP_admin_ui":   "10.1.2.3",
		"NOMAD_PORT_admin_ui":      "25001",
		"NOMAD_HOST_PORT_admin_ui": "25001",
		"NOMAD_ADDR_admin_ui":      "10.1.2.3:25001",
		"NOMAD_HOST_ADDR_admin_ui": "10.1.2.3:25001",

		"NOMAD_IP_raw":        "192.168.0.7",
		"NOMAD_HOST_IP_raw":   "192.168.0.7",
		"NOMAD_PORT_raw":      "25002",
		"NOMAD_HOST_PORT_raw": "25002",
		"NOMAD_ADDR_raw":      "192.168.0.7:25002",
		"NOMAD_HOST_ADDR_raw": "192.168.0.7:25002",

		"NOMAD_META_tier":      "task",
		"NOMAD_META_TIER":      "task",
		"NOMAD_META_owner":     "team-a",
		"NOMAD_META_OWNER":     "team-a",
		"NOMAD_META_group_key": "g",
		"NOMAD_META_GROUP_KEY": "g",
		"NOMAD_META_task_only": "t",
		"NOMAD_META_TASK_ONLY": "t",

		"GREETING":  "hello node-1 in dc1",
		"ADDR":      "192.168.0.7:25000",
		"KERNEL":    "linux",
		"RACK":      "r42",
		"UNKNOWN":   "${nope.thing}",
		"SELF":      "${GREETING}", // the env block does not see itself
		"NOMAD_DC":  "overridden",  // the env block wins
		"META_TIER": "task",
	}
	require.Equal(t, want, env)
}

func TestBuildDefaults(t *testing.T) {
	in := testInput()
	in.Node = nil
	in.Alloc.AllocatedResources = nil
	in.Task.Env = nil
	env := Build(in)
	ip, ok := env.Get("NOMAD_CPU_LIMIT")
	require.True(t, ok)
	require.Equal(t, "100", ip, "task resources without allocated resources")
	_, ok = env.Get("NOMAD_DC")
	require.False(t, ok)
	_, ok = env.Get("NOMAD_MEMORY_MAX_LIMIT")
	require.False(t, ok)
	require.Equal(t, "${node.unique.name}", env.Replace("${node.unique.name}"))
	require.Equal(t, "eu", env.Replace("${node.region}"))

	in = testInput()
	in.Alloc.AllocatedResources.Shared.Ports[0].HostIP = ""
	delete(in.Node.Attributes, NodeIPAttribute)
	ip, _ = Build(in).Get("NOMAD_IP_http")
	require.Equal(t, "127.0.0.1", ip)
}

func TestReplace(t *testing.T) {
	env := Build(testInput())
	for in, want := range map[string]string{
		"":                  "",
		"plain":             "plain",
		"${NOMAD_ALLOC_ID}": "0123456789abcdef",
		"x-${NOMAD_TASK_NAME}-${attr.kernel.name}-y":   "x-web-linux-y",
		"${ NOMAD_TASK_NAME }":                         "web",
		"${node.unique.id}/${node.class}/${node.pool}": "node-id/edge/default",
		"${missing}":           "${missing}",
		"${unterminated":       "${unterminated",
		"$NOMAD_TASK_NAME":     "$NOMAD_TASK_NAME",
		"${NOMAD_TASK_NAME}${": "web${",
		"${GREETING}":          "hello node-1 in dc1", // config sees the env block
	} {
		require.Equal(t, want, env.Replace(in), "Replace(%q)", in)
	}
}

func TestReplaceConfigIsDeepAndCopies(t *testing.T) {
	env := Build(testInput())
	config := map[string]any{
		"command": "/bin/${NOMAD_TASK_NAME}",
		"args":    []any{"--port", "${NOMAD_PORT_http}", 3.0},
		"list":    []string{"${node.datacenter}"},
		"labels":  map[string]any{"dc": "${node.datacenter}", "n": 1},
		"mounts":  []map[string]any{{"source": "${NOMAD_ALLOC_DIR}"}},
		"smap":    map[string]string{"rack": "${meta.rack}"},
		"count":   2,
		"enabled": true,
	}
	got := env.ReplaceConfig(config)
	require.Equal(t, map[string]any{
		"command": "/bin/web",
		"args":    []any{"--port", "8080", 3.0},
		"list":    []string{"dc1"},
		"labels":  map[string]any{"dc": "dc1", "n": 1},
		"mounts":  []map[string]any{{"source": "/data/a/alloc"}},
		"smap":    map[string]string{"rack": "r42"},
		"count":   2,
		"enabled": true,
	}, got)
	require.Equal(t, "${NOMAD_PORT_http}", config["args"].([]any)[1], "the job's config is not modified")
	require.Equal(t, "${node.datacenter}", config["labels"].(map[string]any)["dc"])
	require.Nil(t, env.ReplaceConfig(nil))
	require.Nil(t, env.ReplaceSlice(nil))
}

func TestAllocIndexAndCleanKey(t *testing.T) {
	for name, want := range map[string]int{
		"job.group[0]": 0, "job.group[12]": 12, "job.gr[oup][3]": 3, "job.group": 0, "job.group[x]": 0, "job.group[-1]": 0, "": 0,
	} {
		require.Equal(t, want, AllocIndex(name), name)
	}
	require.Equal(t, "a_b_c_D9_", CleanKey("a-b.c_D9/"))
}

// TestBuildUnixAddr: NOMAD_UNIX_ADDR is set when the task has a task API
// socket, and only then.
func TestBuildUnixAddr(t *testing.T) {
	_, ok := Build(testInput()).Get("NOMAD_UNIX_ADDR")
	require.False(t, ok)
	in := testInput()
	in.UnixAddr = "unix:///data/a/web/secrets/api.sock"
	addr, ok := Build(in).Get("NOMAD_UNIX_ADDR")
	require.True(t, ok)
	require.Equal(t, "unix:///data/a/web/secrets/api.sock", addr)
}

// TestBuildTaskNetworkPorts: the ports of a task's own (legacy,
// task-level) network are in its environment as the group's are; another
// task's are not.
func TestBuildTaskNetworkPorts(t *testing.T) {
	in := testInput()
	tr := in.Alloc.AllocatedResources.Tasks["web"]
	tr.Networks = []*structs.NetworkResource{{IP: "10.9.9.9",
		ReservedPorts: []structs.Port{{Label: "db", Value: 6379}},
		DynamicPorts:  []structs.Port{{Label: "metrics", Value: 23456}, {Label: "mapped", Value: 23457, To: 9000}},
	}}
	in.Alloc.AllocatedResources.Tasks["other"] = &structs.AllocatedTaskResources{Networks: []*structs.NetworkResource{{
		DynamicPorts: []structs.Port{{Label: "theirs", Value: 23458}},
	}}}
	env := Build(in)
	for k, want := range map[string]string{
		"NOMAD_IP_db": "10.9.9.9", "NOMAD_PORT_db": "6379", "NOMAD_HOST_PORT_db": "6379", "NOMAD_ADDR_db": "10.9.9.9:6379",
		"NOMAD_PORT_metrics": "23456", "NOMAD_HOST_ADDR_metrics": "10.9.9.9:23456",
		"NOMAD_PORT_mapped": "9000", "NOMAD_HOST_PORT_mapped": "23457",
		"NOMAD_PORT_http": "8080", // the group's still
	} {
		got, ok := env.Get(k)
		require.True(t, ok, k)
		require.Equal(t, want, got, k)
	}
	_, ok := env.Get("NOMAD_PORT_theirs")
	require.False(t, ok, "another task's network")
}
