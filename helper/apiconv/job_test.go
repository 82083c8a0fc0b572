package apiconv

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// apiSystemJob is a realistic submitted system job, as the CLI sends it:
// not canonicalized, driver config decoded from JSON.
func apiSystemJob(t *testing.T) *api.Job {
	t.Helper()
	const body = `{
	  "ID": "edge", "Type": "system", "Datacenters": ["dc1", "dc2"],
	  "Meta": {"owner": "net"},
	  "Constraints": [{"LTarget": "${attr.kernel.name}", "Operand": "=", "RTarget": "linux"}],
	  "Update": {"Stagger": 15000000000, "MaxParallel": 2, "Canary": 20, "AutoRevert": true, "HealthCheck": "task_states",
	             "MinHealthyTime": 5000000000, "HealthyDeadline": 120000000000},
	  "TaskGroups": [{
	    "Name": "proxy",
	    "Update": {"AutoPromote": true},
	    "Networks": [{"Mode": "host",
	      "ReservedPorts": [{"Label": "http", "Value": 80, "To": 8080}],
	      "DynamicPorts": [{"Label": "metrics", "To": -1}]}],
	    "Services": [{"Name": "proxy", "PortLabel": "http", "Tags": ["edge"],
	      "Checks": [{"Name": "alive", "Type": "http", "Path": "/healthz",
	                  "Interval": 10000000000, "Timeout": 2000000000}]}],
	    "Tasks": [{
	      "Name": "envoy", "Driver": "docker",
	      "Config": {"image": "envoyproxy/envoy:v1.31", "args": ["-c", "/local/envoy.yaml"],
	                 "ports": ["http", "metrics"], "cpu_hard_limit": true, "shm_size": 67108864,
	                 "mount": [{"type": "bind", "source": "/etc/ssl", "target": "/etc/ssl", "readonly": true}],
	                 "logging": [{"type": "json-file", "config": [{"max-size": "10m"}]}]},
	      "Env": {"ENVOY_UID": "0", "ADDR": "${NOMAD_ADDR_http}"},
	      "Meta": {"tier": "edge"},
	      "Constraints": [{"LTarget": "${attr.cpu.arch}", "Operand": "set_contains_any", "RTarget": "amd64,arm64"}],
	      "Resources": {"CPU": 500, "MemoryMB": 256, "MemoryMaxMB": 512},
	      "KillTimeout": 30000000000, "KillSignal": "SIGTERM"
	    }]
	  }]
	}`
	var j api.Job
	require.NoError(t, json.Unmarshal([]byte(body), &j))
	return &j
}

func TestJobFromAPI_RealisticSystemJob(t *testing.T) {
	in := apiSystemJob(t)
	wantConfig := in.TaskGroups[0].Tasks[0].Config // the same map; not changed by conversion

	job, warnings, err := JobFromAPI(in)
	require.NoError(t, err)
	assert.Equal(t, []string{`group "proxy": service "proxy": no provider: registered in Drover's native service catalog (provider "nomad"); Nomad would have used Consul`},
		warnings, "a service without provider is Drover's, and the submitter is told Nomad would have used Consul")
	require.NoError(t, job.Validate())

	// Defaults from api.Job.Canonicalize and structs.Job.Canonicalize.
	assert.Equal(t, "edge", job.Name)
	assert.Equal(t, structs.DefaultNamespace, job.Namespace)
	assert.Equal(t, "global", job.Region)
	assert.Equal(t, structs.DefaultNodePool, job.NodePool)
	assert.Equal(t, 50, job.Priority)

	tg := job.TaskGroups[0]
	assert.Equal(t, 1, tg.Count)
	// The job-level update merged into the group, group fields win, defaults fill the rest.
	assert.Equal(t, &structs.UpdateStrategy{
		Stagger: 15 * time.Second, MaxParallel: 2, HealthCheck: "task_states",
		MinHealthyTime: 5 * time.Second, HealthyDeadline: 2 * time.Minute,
		ProgressDeadline: 10 * time.Minute, Canary: 20, AutoRevert: true, AutoPromote: true,
	}, tg.Update)
	assert.Equal(t, &structs.RestartPolicy{Interval: 30 * time.Minute, Attempts: 2, Delay: 15 * time.Second, Mode: "fail"}, tg.RestartPolicy)
	assert.Nil(t, tg.ReschedulePolicy, "system jobs do not reschedule")
	assert.Equal(t, []*structs.NetworkResource{{
		Mode:          "host",
		ReservedPorts: []structs.Port{{Label: "http", Value: 80, To: 8080}},
		DynamicPorts:  []structs.Port{{Label: "metrics", To: -1}},
	}}, tg.Networks)
	require.Len(t, tg.Services, 1)
	svc := tg.Services[0]
	assert.Equal(t, "nomad", svc.Provider, "Drover's default provider")
	assert.Equal(t, "http", svc.PortLabel)
	assert.Equal(t, []string{"edge"}, svc.Tags)
	assert.Equal(t, structs.ServiceCheck{
		Name: "alive", Type: "http", Path: "/healthz", Interval: 10 * time.Second, Timeout: 2 * time.Second,
		OnUpdate: "require_healthy",
	}, svc.Checks[0])

	task := tg.Tasks[0]
	assert.Equal(t, "docker", task.Driver)
	assert.Equal(t, wantConfig, task.Config, "driver config keeps its shape and Go types")
	assert.IsType(t, []any{}, task.Config["mount"])
	assert.IsType(t, map[string]any{}, task.Config["mount"].([]any)[0])
	assert.IsType(t, float64(0), task.Config["shm_size"])
	assert.Equal(t, map[string]string{"ENVOY_UID": "0", "ADDR": "${NOMAD_ADDR_http}"}, task.Env)
	assert.Equal(t, map[string]string{"tier": "edge"}, task.Meta)
	assert.Equal(t, []*structs.Constraint{{LTarget: "${attr.cpu.arch}", Operand: "set_contains_any", RTarget: "amd64,arm64"}}, task.Constraints)
	assert.Equal(t, &structs.Resources{CPU: 500, MemoryMB: 256, MemoryMaxMB: 512}, task.Resources)
	assert.Equal(t, 30*time.Second, task.KillTimeout)
	assert.Equal(t, "SIGTERM", task.KillSignal)
	assert.Equal(t, &structs.LogConfig{MaxFiles: 10, MaxFileSizeMB: 10}, task.LogConfig)
	assert.Equal(t, tg.RestartPolicy, task.RestartPolicy, "tasks inherit the group restart policy")

	// Mutating the converted config does not reach the submitted one.
	task.Config["image"] = "changed"
	assert.Equal(t, "envoyproxy/envoy:v1.31", wantConfig["image"])
}

func TestJobRoundTrip_APIStructsAPI(t *testing.T) {
	in := apiSystemJob(t)
	job, _, err := JobFromAPI(in) // canonicalizes in
	require.NoError(t, err)
	job.Version, job.SubmitTime, job.Status = 4, 1_700_000_000_000_000_000, structs.JobStatusRunning
	out := JobToAPI(job)

	// Every pointer the CLI dereferences is set.
	for name, p := range map[string]any{
		"ID": out.ID, "Name": out.Name, "Type": out.Type, "Priority": out.Priority,
		"Namespace": out.Namespace, "Status": out.Status, "SubmitTime": out.SubmitTime,
		"Version": out.Version, "Stable": out.Stable, "Stop": out.Stop, "Region": out.Region,
		"NodePool": out.NodePool, "JobModifyIndex": out.JobModifyIndex,
		"CreateIndex": out.CreateIndex, "ModifyIndex": out.ModifyIndex, "ParentID": out.ParentID,
	} {
		assert.NotNil(t, p, name)
	}
	assert.Equal(t, uint64(4), *out.Version)
	assert.Equal(t, int64(1_700_000_000_000_000_000), *out.SubmitTime)
	assert.Equal(t, "running", *out.Status)

	// The supported fields come back as canonicalized on the way in.
	assert.Equal(t, in.Datacenters, out.Datacenters)
	assert.Equal(t, in.Meta, out.Meta)
	assert.Equal(t, in.Constraints, out.Constraints)
	inTG, outTG := in.TaskGroups[0], out.TaskGroups[0]
	assert.Equal(t, inTG.Update, outTG.Update)
	assert.Equal(t, inTG.RestartPolicy, outTG.RestartPolicy)
	assert.Equal(t, inTG.EphemeralDisk, outTG.EphemeralDisk)
	require.Len(t, outTG.Networks, 1)
	assert.Equal(t, inTG.Networks[0].Mode, outTG.Networks[0].Mode)
	assert.Equal(t, inTG.Networks[0].ReservedPorts, outTG.Networks[0].ReservedPorts)
	assert.Equal(t, inTG.Networks[0].DynamicPorts, outTG.Networks[0].DynamicPorts)
	assert.Equal(t, inTG.Services[0].Name, outTG.Services[0].Name)
	assert.Equal(t, inTG.Services[0].Checks[0].Path, outTG.Services[0].Checks[0].Path)
	assert.Equal(t, inTG.Services[0].Checks[0].Interval, outTG.Services[0].Checks[0].Interval)
	inTask, outTask := inTG.Tasks[0], outTG.Tasks[0]
	assert.Equal(t, inTask.Config, outTask.Config)
	assert.Equal(t, inTask.Env, outTask.Env)
	assert.Equal(t, inTask.Meta, outTask.Meta)
	assert.Equal(t, inTask.Constraints, outTask.Constraints)
	assert.Equal(t, inTask.Resources.CPU, outTask.Resources.CPU)
	assert.Equal(t, inTask.Resources.MemoryMB, outTask.Resources.MemoryMB)
	assert.Equal(t, inTask.Resources.MemoryMaxMB, outTask.Resources.MemoryMaxMB)
	assert.Equal(t, inTask.KillTimeout, outTask.KillTimeout)
	assert.Equal(t, inTask.LogConfig.MaxFiles, outTask.LogConfig.MaxFiles)

	// And on the wire durations are nanoseconds.
	data, err := json.Marshal(out)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"ProgressDeadline":600000000000`)
	assert.Contains(t, string(data), `"KillTimeout":30000000000`)

	// A second trip through the api types changes nothing.
	again, warnings, err := JobFromAPI(out)
	require.NoError(t, err)
	assert.Empty(t, warnings)
	assert.Equal(t, job, again)
	assert.False(t, job.SpecChanged(again))
}

func TestJobFromAPI_SystemDefaultUpdate(t *testing.T) {
	j := &api.Job{
		ID: new("sys"), Type: new("system"),
		TaskGroups: []*api.TaskGroup{{Name: new("g"), Tasks: []*api.Task{{Name: "t", Driver: "mock"}}}},
	}
	job, _, err := JobFromAPI(j)
	require.NoError(t, err)
	want := &structs.UpdateStrategy{
		Stagger: 0 /* the defaulted 30s is not honoured */, MaxParallel: 1, HealthCheck: "checks",
		MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute, ProgressDeadline: 10 * time.Minute,
	}
	assert.Equal(t, want, job.TaskGroups[0].Update)
	assert.True(t, job.TaskGroups[0].UsesDeployment())
	assert.Equal(t, []string{"*"}, job.Datacenters, "no datacenters means all of them")
	assert.Equal(t, &structs.Resources{CPU: 100, MemoryMB: 300}, job.TaskGroups[0].Tasks[0].Resources)
	assert.Equal(t, 5*time.Second, job.TaskGroups[0].Tasks[0].KillTimeout)
	require.NoError(t, job.Validate())

	sb := &api.Job{
		ID: new("batch"), Type: new("sysbatch"),
		TaskGroups: []*api.TaskGroup{{Name: new("g"), Tasks: []*api.Task{{Name: "t", Driver: "mock"}}}},
	}
	job, _, err = JobFromAPI(sb)
	require.NoError(t, err)
	assert.Nil(t, job.TaskGroups[0].Update, "sysbatch jobs get no default update block")
	assert.Equal(t, 3, job.TaskGroups[0].RestartPolicy.Attempts, "batch restart defaults")
	require.NoError(t, job.Validate())
}

// TestJobFromAPI_MaxRunDuration: a batch group's max_run_duration is
// carried (the client enforces it) and comes back as submitted; on a
// service job it is refused by validation, naming the field.
func TestJobFromAPI_MaxRunDuration(t *testing.T) {
	j := &api.Job{
		ID: new("report"), Type: new("batch"),
		TaskGroups: []*api.TaskGroup{{Name: new("g"), MaxRunDuration: new(90 * time.Second),
			Tasks: []*api.Task{{Name: "t", Driver: "mock"}}}},
	}
	job, warnings, err := JobFromAPI(j)
	require.NoError(t, err)
	assert.Empty(t, warnings)
	require.NotNil(t, job.TaskGroups[0].MaxRunDuration)
	assert.Equal(t, 90*time.Second, *job.TaskGroups[0].MaxRunDuration)
	require.NoError(t, job.Validate())
	assert.Equal(t, new(90*time.Second), JobToAPI(job).TaskGroups[0].MaxRunDuration)

	j.Type = new("service")
	job, _, err = JobFromAPI(j)
	require.NoError(t, err)
	require.ErrorContains(t, job.Validate(), "max_run_duration is only valid for batch and sysbatch jobs, not service jobs")
}

func TestJobFromAPI_ServiceJobDefaults(t *testing.T) {
	j := &api.Job{ID: new("svc"), TaskGroups: []*api.TaskGroup{{Name: new("g"), Tasks: []*api.Task{{Name: "t", Driver: "mock"}}}}}
	job, _, err := JobFromAPI(j)
	require.NoError(t, err)
	require.NoError(t, job.Validate())
	tg := job.TaskGroups[0]
	assert.Equal(t, structs.JobTypeService, job.Type)
	assert.Equal(t, 1, tg.Count)
	require.NotNil(t, tg.ReschedulePolicy)
	assert.True(t, tg.ReschedulePolicy.Unlimited, "service jobs reschedule without limit by default")
	assert.Equal(t, "exponential", tg.ReschedulePolicy.DelayFunction)
	require.NotNil(t, tg.Update)
	assert.Equal(t, 1, tg.Update.MaxParallel)
}

// TestJobFromAPI_RefusesWhatIsNotDone: every set block Drover does not
// carry out is refused, naming the block and why, and nothing is
// converted; what changes nothing at run time is only warned about.
func TestJobFromAPI_RefusesWhatIsNotDone(t *testing.T) {
	j := apiSystemJob(t)
	tg := j.TaskGroups[0]
	task := tg.Tasks[0]
	task.Name = "x"
	task.Templates = []*api.Template{{EmbeddedTmpl: new("x"), DestPath: new("local/x"), VaultGrace: new(5 * time.Second)}}
	task.Vault = &api.Vault{Role: "r"}
	task.Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu"}}
	tg.Volumes = map[string]*api.VolumeRequest{"data": {Name: "data", Type: "host", Source: "data", Sticky: true}}
	tg.Services[0].Checks[0].GRPCService = "health"
	tg.Services = append(tg.Services, &api.Service{Name: "legacy", Provider: "consul"})
	j.Multiregion = &api.Multiregion{}
	j.Reschedule = &api.ReschedulePolicy{Attempts: new(1)} // merged into groups: neither refused nor warned

	job, warnings, err := JobFromAPI(j)
	require.NotNil(t, job, "converted without the refused blocks, for the other checks")
	require.Equal(t, []string{`group "proxy": service "proxy": no provider: registered in Drover's native service catalog (provider "nomad"); Nomad would have used Consul`}, warnings)
	var verr *structs.ValidationError
	require.ErrorAs(t, err, &verr)
	require.ErrorIs(t, err, structs.ErrBadRequest, "an HTTP 400")
	assert.Equal(t, []string{
		`group "proxy": task "x": device: device plugins are not supported by Drover`,
		`group "proxy": task "x": vault: this cluster has no Vault integration`,
		`group "proxy": task "x": vault_grace: vault_grace is for Vault tokens: this cluster has no Vault integration`,
		`group "proxy": volume "data": sticky: sticky volume claims are not supported by Drover yet`,
		`group "proxy": service "proxy": check "alive": grpc_service: gRPC checks need Consul: this cluster has no Consul integration`,
		"multiregion: multiregion deployments are not supported by Drover",
		`group "proxy": service "legacy": provider "consul": this cluster has no Consul integration; use provider = "nomad"`,
	}, verr.Problems)
}

func TestJobFromAPI_WarnsOnlyForWhatChangesNothing(t *testing.T) {
	j := apiSystemJob(t)
	j.UI = &api.JobUIConfig{Description: "the proxy"}
	j.TaskGroups[0].Services[0].EnableTagOverride = true
	j.TaskGroups[0].Services[0].Provider = "nomad"
	job, warnings, err := JobFromAPI(j)
	require.NoError(t, err)
	require.NotNil(t, job)
	assert.Equal(t, []string{
		`group "proxy": service "proxy": enable_tag_override is not kept by Drover: it is a Consul setting`,
		"ui is not kept by Drover: it is shown by Nomad's web UI only",
	}, warnings)
}

func TestJobFromAPI_Nulls(t *testing.T) {
	cases := map[string]*api.Job{
		"task group 0 is null":              {ID: new("x"), TaskGroups: []*api.TaskGroup{nil}},
		`task group "g": task 0 is null`:    {ID: new("x"), TaskGroups: []*api.TaskGroup{{Name: new("g"), Tasks: []*api.Task{nil}}}},
		`task group "g": service 0 is null`: {ID: new("x"), TaskGroups: []*api.TaskGroup{{Name: new("g"), Services: []*api.Service{nil}}}},
	}
	for want, j := range cases {
		_, _, err := JobFromAPI(j)
		assert.EqualError(t, err, want)
	}
}

// TestJobFromAPI_ScriptChecksAndCheckRestart: script checks and
// check_restart are carried; a service's check_restart is merged into its
// checks (the check's own fields win) and a check's grace defaults to 1s.
func TestJobFromAPI_ScriptChecksAndCheckRestart(t *testing.T) {
	j := apiSystemJob(t)
	s := j.TaskGroups[0].Services[0]
	s.TaskName = "envoy"
	s.Provider = "nomad"
	s.CheckRestart = &api.CheckRestart{Limit: 3, IgnoreWarnings: true}
	s.Checks = append(s.Checks, api.ServiceCheck{
		Name: "config", Type: "script", Command: "/bin/sh", Args: []string{"-c", "test -f /local/envoy.yaml"},
		Interval: 5 * time.Second, Timeout: time.Second, CheckRestart: &api.CheckRestart{Limit: 1, Grace: new(30 * time.Second)},
	})
	job, warnings, err := JobFromAPI(j)
	require.NoError(t, err)
	assert.Empty(t, warnings)
	got := job.TaskGroups[0].Services[0]
	assert.Equal(t, &structs.CheckRestart{Limit: 3, IgnoreWarnings: true}, got.CheckRestart, "kept as submitted")
	require.Len(t, got.Checks, 2)
	assert.Equal(t, &structs.CheckRestart{Limit: 3, Grace: time.Second, IgnoreWarnings: true}, got.Checks[0].CheckRestart)
	script := got.Checks[1]
	assert.Equal(t, "script", script.Type)
	assert.Equal(t, "/bin/sh", script.Command)
	assert.Equal(t, []string{"-c", "test -f /local/envoy.yaml"}, script.Args)
	assert.Equal(t, &structs.CheckRestart{Limit: 1, Grace: 30 * time.Second, IgnoreWarnings: true}, script.CheckRestart)
	require.NoError(t, job.Validate())
}

// TestJobFromAPI_Disconnect: the disconnect block is carried, with the
// api's defaults (replace, best_score), and the older group settings too.
func TestJobFromAPI_Disconnect(t *testing.T) {
	j := &api.Job{ID: new("svc"), TaskGroups: []*api.TaskGroup{
		{Name: new("new"), Tasks: []*api.Task{{Name: "t", Driver: "mock"}},
			Disconnect: &api.DisconnectStrategy{LostAfter: new(time.Minute)}},
		{Name: new("old"), Tasks: []*api.Task{{Name: "t", Driver: "mock"}},
			MaxClientDisconnect: new(time.Hour), StopAfterClientDisconnect: new(90 * time.Second), PreventRescheduleOnLost: new(true)},
	}}
	job, warnings, err := JobFromAPI(j)
	require.NoError(t, err)
	assert.Empty(t, warnings)
	require.NoError(t, job.Validate())
	d := job.TaskGroups[0].Disconnect
	require.NotNil(t, d)
	assert.Equal(t, time.Minute, *d.LostAfter)
	assert.True(t, *d.Replace)
	assert.Equal(t, structs.ReconcileBestScore, *d.Reconcile)
	assert.Equal(t, time.Minute, job.TaskGroups[0].LostAfter())
	assert.Equal(t, time.Hour, job.TaskGroups[1].LostAfter())
	assert.Equal(t, 90*time.Second, job.TaskGroups[1].StopOnClientAfter())
	assert.True(t, job.TaskGroups[0].ReplaceDisconnected())
	assert.False(t, job.TaskGroups[1].ReplaceDisconnected(), "prevent_reschedule_on_lost")

	back := JobToAPI(job)
	assert.Equal(t, time.Minute, *back.TaskGroups[0].Disconnect.LostAfter)
}
