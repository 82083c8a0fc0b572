package nomad

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/structs"
)

func TestValidateJob_DriverConfigs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		driver    string
		config    map[string]any
		validated bool
		problem   string // "" for none
	}{
		{"valid docker config", "docker", map[string]any{"image": "nginx:1", "prefetch": false}, true, ""},
		{"unknown docker key", "docker", map[string]any{"image": "nginx:1", "no_such_key": true},
			true, `Task group "web" validation failed: task "server": config: no_such_key is not a known option`},
		{"wrong type", "raw_exec", map[string]any{"command": "/bin/true", "args": "not-a-list"},
			true, `task "server": config: args`},
		{"prefetch must be a bool", "raw_exec", map[string]any{"command": "/bin/true", "prefetch": "often"},
			true, `config: prefetch must be a bool`},
		{"interpolated values are the node's", "raw_exec", map[string]any{"command": "${NOMAD_TASK_DIR}/run", "args": "${attr.x}"}, true, ""},
		{"a driver Drover lacks is not checked", "podman", map[string]any{"image": "redis", "anything": 1}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := validJob(t)
			task := job.TaskGroups[0].Tasks[0]
			task.Driver, task.Config = tc.driver, tc.config
			validated, err := ValidateJob(job)
			require.Equal(t, tc.validated, validated)
			if tc.problem == "" {
				require.NoError(t, err)
				return
			}
			var verr *structs.ValidationError
			require.ErrorAs(t, err, &verr)
			require.ErrorContains(t, err, tc.problem)
			require.NotNil(t, validateSubmitted(job), "the write paths refuse it")
		})
	}
}

func TestValidateJob_KeepsTheJobsOwnProblems(t *testing.T) {
	job := validJob(t)
	job.TaskGroups[0].Tasks[0].Config = map[string]any{"image": "nginx:1", "bogus": 1}
	job.TaskGroups[0].Count = 5 // a system group runs one per node
	_, err := ValidateJob(job)
	var verr *structs.ValidationError
	require.ErrorAs(t, err, &verr)
	require.Len(t, verr.Problems, 2, "%v", verr.Problems)
}

// validJob is mock.Job made valid: a full update block and resources.
func validJob(t *testing.T) *structs.Job {
	t.Helper()
	job := mock.Job("j")
	job.TaskGroups[0].Update = &structs.UpdateStrategy{MaxParallel: 1, HealthCheck: structs.UpdateHealthCheckTaskStates,
		MinHealthyTime: time.Second, HealthyDeadline: time.Minute, ProgressDeadline: 10 * time.Minute}
	job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 64}
	job.Canonicalize()
	require.NoError(t, job.Validate())
	return job
}

// A Docker task's ports must name ports of its group's network (or its
// own, legacy): the client could never start it otherwise.
func TestValidateJob_DockerPortsNameNetworkPorts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ports   []any
		task    bool // the port is in the task's resources network, not the group's
		problem string
	}{
		{"group port", []any{"http"}, false, ""},
		{"task port (legacy)", []any{"http"}, true, ""},
		{"interpolated", []any{"${NOMAD_META_port}"}, false, ""},
		{"unknown", []any{"http", "80"}, false, `Task group "web" validation failed: task "server": config: ports names port "80", which is not a port of the group's network block`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := validJob(t)
			tg := job.TaskGroups[0]
			task := tg.Tasks[0]
			task.Driver, task.Config = "docker", map[string]any{"image": "nginx:1", "ports": tc.ports}
			net := &structs.NetworkResource{DynamicPorts: []structs.Port{{Label: "http"}}}
			if tc.task {
				task.Resources.Networks = []*structs.NetworkResource{net}
			} else {
				tg.Networks = []*structs.NetworkResource{net}
			}
			_, err := ValidateJob(job)
			if tc.problem == "" {
				require.NoError(t, err)
				return
			}
			var verr *structs.ValidationError
			require.ErrorAs(t, err, &verr)
			require.Equal(t, []string{tc.problem}, verr.Problems)
		})
	}
}
