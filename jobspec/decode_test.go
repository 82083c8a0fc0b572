package jobspec

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

func TestDecode_JobFields(t *testing.T) {
	job := mustParse(t, `
job "j" {
  type        = "sysbatch"
  datacenters = ["dc1", "dc2"]
  node_pool   = "gpu"
  namespace   = "team-a"
  region      = "eu"
  priority    = 70
  all_at_once = true
  meta {
    owner = "ops"
  }
  constraint {
    attribute = "${attr.os.name}"
    value     = "ubuntu"
  }
  affinity {
    attribute = "${node.datacenter}"
    value     = "dc1"
    weight    = -50
  }
  spread {
    attribute = "${node.datacenter}"
    weight    = 100
    target "dc1" {
      percent = 60
    }
    target "dc2" {
      percent = 40
    }
  }
  migrate {
    max_parallel = 2
  }
  reschedule {
    delay          = "30s"
    delay_function = "exponential"
    unlimited      = true
  }
  periodic {
    crons            = ["@daily"]
    prohibit_overlap = true
  }
}`)
	require.Equal(t, "sysbatch", *job.Type)
	require.Equal(t, []string{"dc1", "dc2"}, job.Datacenters)
	require.Equal(t, "gpu", *job.NodePool)
	require.Equal(t, "team-a", *job.Namespace)
	require.Equal(t, "eu", *job.Region)
	require.Equal(t, 70, *job.Priority)
	require.True(t, *job.AllAtOnce)
	require.Equal(t, map[string]string{"owner": "ops"}, job.Meta)
	require.Equal(t, []*api.Constraint{{LTarget: "${attr.os.name}", RTarget: "ubuntu", Operand: "="}}, job.Constraints)
	require.Equal(t, []*api.Affinity{{LTarget: "${node.datacenter}", RTarget: "dc1", Operand: "=", Weight: ptr(int8(-50))}}, job.Affinities)
	require.Equal(t, []*api.Spread{{
		Attribute: "${node.datacenter}", Weight: ptr(int8(100)),
		SpreadTarget: []*api.SpreadTarget{{Value: "dc1", Percent: 60}, {Value: "dc2", Percent: 40}},
	}}, job.Spreads)
	require.Equal(t, &api.MigrateStrategy{MaxParallel: ptr(2)}, job.Migrate)
	require.Equal(t, &api.ReschedulePolicy{Delay: ptr(30 * time.Second), DelayFunction: ptr("exponential"), Unlimited: ptr(true)}, job.Reschedule)
	require.Equal(t, []string{"@daily"}, job.Periodic.Specs)
	require.True(t, *job.Periodic.ProhibitOverlap)
}

func TestDecode_UpdateBlock(t *testing.T) {
	job := mustParse(t, `
job "j" {
  update {
    stagger           = "30s"
    max_parallel      = 3
    health_check      = "task_states"
    min_healthy_time  = "15s"
    healthy_deadline  = "5m"
    progress_deadline = "10m"
    canary            = 2
    auto_revert       = true
    auto_promote      = false
  }
}`)
	require.Equal(t, &api.UpdateStrategy{
		Stagger: ptr(30 * time.Second), MaxParallel: ptr(3), HealthCheck: ptr("task_states"),
		MinHealthyTime: ptr(15 * time.Second), HealthyDeadline: ptr(5 * time.Minute),
		ProgressDeadline: ptr(10 * time.Minute), Canary: ptr(2), AutoRevert: ptr(true), AutoPromote: ptr(false),
	}, job.Update)
}

func TestDecode_GroupFields(t *testing.T) {
	job := mustParse(t, wrapGroup(`
    count = 2
    shutdown_delay = "5s"
    max_client_disconnect = "1h"
    stop_after_client_disconnect = "90s"
    constraint {
      distinct_hosts = true
    }
    affinity {
      attribute = "${meta.rack}"
      value     = "r1"
      weight    = 25
    }
    network {
      mode = "bridge"
      port "http" {
        to = 8080
      }
      port "admin" {
        static       = 9000
        to           = 9001
        host_network = "private"
      }
    }
    restart {
      attempts = 2
      interval = "30m"
      delay    = "15s"
      mode     = "fail"
    }
    reschedule {
      attempts = 1
      interval = "1h"
    }
    ephemeral_disk {
      size    = 500
      sticky  = true
      migrate = true
    }
    update {
      canary = 1
    }
    migrate {
      health_check = "checks"
    }
    meta {
      tier = "front"
    }
    volume "data" {
      type      = "host"
      source    = "shared-data"
      read_only = true
    }
    volume "cache" {
      type   = "csi"
      source = "cache-vol"
    }
    task "t" {
      driver = "docker"
    }`))
	tg := job.TaskGroups[0]
	require.Equal(t, "g", *tg.Name)
	require.Equal(t, 2, *tg.Count)
	require.Equal(t, 5*time.Second, *tg.ShutdownDelay)
	require.Equal(t, time.Hour, *tg.MaxClientDisconnect)
	require.Equal(t, 90*time.Second, *tg.StopAfterClientDisconnect)
	require.Equal(t, []*api.Constraint{{Operand: "distinct_hosts", RTarget: "true"}}, tg.Constraints)
	require.Equal(t, []*api.Affinity{{LTarget: "${meta.rack}", RTarget: "r1", Operand: "=", Weight: ptr(int8(25))}}, tg.Affinities)
	require.Equal(t, []*api.NetworkResource{{
		Mode:          "bridge",
		DynamicPorts:  []api.Port{{Label: "http", To: 8080}},
		ReservedPorts: []api.Port{{Label: "admin", Value: 9000, To: 9001, HostNetwork: "private"}},
	}}, tg.Networks)
	require.Equal(t, &api.RestartPolicy{Attempts: ptr(2), Interval: ptr(30 * time.Minute), Delay: ptr(15 * time.Second), Mode: ptr("fail")}, tg.RestartPolicy)
	require.Equal(t, &api.ReschedulePolicy{Attempts: ptr(1), Interval: ptr(time.Hour)}, tg.ReschedulePolicy)
	require.Equal(t, &api.EphemeralDisk{SizeMB: ptr(500), Sticky: ptr(true), Migrate: ptr(true)}, tg.EphemeralDisk)
	require.Equal(t, &api.UpdateStrategy{Canary: ptr(1)}, tg.Update)
	require.Equal(t, &api.MigrateStrategy{HealthCheck: ptr("checks")}, tg.Migrate)
	require.Equal(t, map[string]string{"tier": "front"}, tg.Meta)
	require.Equal(t, map[string]*api.VolumeRequest{
		"data":  {Name: "data", Type: "host", Source: "shared-data", ReadOnly: true},
		"cache": {Name: "cache", Type: "csi", Source: "cache-vol"},
	}, tg.Volumes)
	require.Equal(t, "docker", tg.Tasks[0].Driver)
}

func TestDecode_TaskFields(t *testing.T) {
	task := onlyTask(t, mustParse(t, wrapTask(`
      driver       = "exec"
      user         = "nobody"
      kill_timeout = "30s"
      kill_signal  = "SIGINT"
      leader       = true
      kind         = "connect-proxy:web"
      shutdown_delay = "3s"
      env {
        PORT = "${NOMAD_PORT_http}"
      }
      meta {
        version = 2
      }
      resources {
        cpu        = 500
        cores      = 2
        memory     = 256
        memory_max = 512
        network {
          port "metrics" {}
        }
      }
      restart {
        attempts = 5
      }
      logs {
        max_files     = 3
        max_file_size = 20
        disabled      = false
      }
      artifact {
        source      = "https://example.com/app.tar.gz"
        destination = "local/app"
        mode        = "any"
        options {
          checksum = "sha256:abc"
        }
        headers {
          User-Agent = "drover"
        }
      }
      template {
        data          = "port={{ env \"NOMAD_PORT_http\" }}"
        destination   = "local/app.conf"
        change_mode   = "signal"
        change_signal = "SIGHUP"
        splay         = "5s"
        wait {
          min = "2s"
          max = "10s"
        }
      }
      lifecycle {
        hook    = "prestart"
        sidecar = true
      }
      volume_mount {
        volume      = "data"
        destination = "/srv"
        read_only   = true
      }
      constraint {
        attribute = "${attr.cpu.arch}"
        value     = "amd64"
      }
      affinity {
        attribute = "${node.class}"
        value     = "fast"
        weight    = 10
      }`)))
	require.Equal(t, "t", task.Name)
	require.Equal(t, "exec", task.Driver)
	require.Equal(t, "nobody", task.User)
	require.Equal(t, 30*time.Second, *task.KillTimeout)
	require.Equal(t, "SIGINT", task.KillSignal)
	require.True(t, task.Leader)
	require.Equal(t, "connect-proxy:web", task.Kind)
	require.Equal(t, 3*time.Second, task.ShutdownDelay)
	require.Equal(t, map[string]string{"PORT": "${NOMAD_PORT_http}"}, task.Env)
	require.Equal(t, map[string]string{"version": "2"}, task.Meta)
	require.Equal(t, &api.Resources{
		CPU: ptr(500), Cores: ptr(2), MemoryMB: ptr(256), MemoryMaxMB: ptr(512),
		Networks: []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "metrics"}}}},
	}, task.Resources)
	require.Equal(t, &api.RestartPolicy{Attempts: ptr(5)}, task.RestartPolicy)
	require.Equal(t, &api.LogConfig{MaxFiles: ptr(3), MaxFileSizeMB: ptr(20), Disabled: ptr(false)}, task.LogConfig)
	require.Equal(t, []*api.TaskArtifact{{
		GetterSource: ptr("https://example.com/app.tar.gz"), RelativeDest: ptr("local/app"), GetterMode: ptr("any"),
		GetterOptions: map[string]string{"checksum": "sha256:abc"},
		GetterHeaders: map[string]string{"User-Agent": "drover"},
	}}, task.Artifacts)
	require.Equal(t, []*api.Template{{
		EmbeddedTmpl: ptr(`port={{ env "NOMAD_PORT_http" }}`), DestPath: ptr("local/app.conf"),
		ChangeMode: ptr("signal"), ChangeSignal: ptr("SIGHUP"), Splay: ptr(5 * time.Second),
		Perms: ptr("0644"), ErrMissingKey: ptr(false), // the parser's own defaults
		Wait: &api.WaitConfig{Min: ptr(2 * time.Second), Max: ptr(10 * time.Second)},
	}}, task.Templates)
	require.Equal(t, &api.TaskLifecycle{Hook: "prestart", Sidecar: true}, task.Lifecycle)
	require.Equal(t, []*api.VolumeMount{{Volume: ptr("data"), Destination: ptr("/srv"), ReadOnly: ptr(true)}}, task.VolumeMounts)
	require.Equal(t, []*api.Constraint{{LTarget: "${attr.cpu.arch}", RTarget: "amd64", Operand: "="}}, task.Constraints)
	require.Equal(t, []*api.Affinity{{LTarget: "${node.class}", RTarget: "fast", Operand: "=", Weight: ptr(int8(10))}}, task.Affinities)
}

func TestDecode_Service(t *testing.T) {
	job := mustParse(t, wrapGroup(`
    service {
      name         = "api"
      port         = "http"
      tags         = ["v1", "${meta.rack}"]
      canary_tags  = ["canary"]
      provider     = "consul"
      address_mode = "host"
      task         = "t"
      meta {
        team = "a"
      }
      check {
        name           = "health"
        type           = "http"
        path           = "/v1/health"
        port           = "admin"
        interval       = "15s"
        timeout        = "3s"
        method         = "POST"
        protocol       = "https"
        initial_status = "passing"
        tls_skip_verify = true
        header {
          Authorization = ["Bearer x"]
          X-Multi       = ["a", "b"]
        }
        check_restart {
          limit = 3
          grace = "90s"
        }
      }
      check {
        type     = "tcp"
        interval = 10000000000
        timeout  = 2000000000
      }
    }`))
	svc := job.TaskGroups[0].Services[0]
	require.Equal(t, "api", svc.Name)
	require.Equal(t, "http", svc.PortLabel)
	require.Equal(t, []string{"v1", "${meta.rack}"}, svc.Tags)
	require.Equal(t, []string{"canary"}, svc.CanaryTags)
	require.Equal(t, "consul", svc.Provider)
	require.Equal(t, "host", svc.AddressMode)
	require.Equal(t, "t", svc.TaskName)
	require.Equal(t, map[string]string{"team": "a"}, svc.Meta)
	require.Equal(t, []api.ServiceCheck{
		{
			Name: "health", Type: "http", Path: "/v1/health", PortLabel: "admin",
			Interval: 15 * time.Second, Timeout: 3 * time.Second, Method: "POST", Protocol: "https",
			InitialStatus: "passing", TLSSkipVerify: true,
			Header:       map[string][]string{"Authorization": {"Bearer x"}, "X-Multi": {"a", "b"}},
			CheckRestart: &api.CheckRestart{Limit: 3, Grace: ptr(90 * time.Second)},
		},
		{Type: "tcp", Interval: 10 * time.Second, Timeout: 2 * time.Second},
	}, svc.Checks)
}

func TestDecode_ConstraintShorthands(t *testing.T) {
	cases := []struct {
		body string
		want api.Constraint
	}{
		{`distinct_hosts = true`, api.Constraint{Operand: "distinct_hosts", RTarget: "true"}},
		{`distinct_hosts = false`, api.Constraint{Operand: "distinct_hosts", RTarget: "false"}},
		{`distinct_property = "${meta.rack}"`, api.Constraint{Operand: "distinct_property", LTarget: "${meta.rack}"}},
		{"distinct_property = \"${meta.rack}\"\nvalue = 2", api.Constraint{Operand: "distinct_property", LTarget: "${meta.rack}", RTarget: "2"}},
		{"attribute = \"${attr.nomad.version}\"\nversion = \">= 1.0\"", api.Constraint{LTarget: "${attr.nomad.version}", Operand: "version", RTarget: ">= 1.0"}},
		{"attribute = \"${attr.nomad.version}\"\nsemver = \"~> 1.6\"", api.Constraint{LTarget: "${attr.nomad.version}", Operand: "semver", RTarget: "~> 1.6"}},
		{"attribute = \"${attr.unique.hostname}\"\nregexp = \"^web-\"", api.Constraint{LTarget: "${attr.unique.hostname}", Operand: "regexp", RTarget: "^web-"}},
		{"attribute = \"${meta.tags}\"\nset_contains = \"a\"", api.Constraint{LTarget: "${meta.tags}", Operand: "set_contains", RTarget: "a"}},
		{"attribute = \"${meta.tags}\"\nset_contains_any = \"a,b\"", api.Constraint{LTarget: "${meta.tags}", Operand: "set_contains_any", RTarget: "a,b"}},
		{"attribute = \"${meta.tags}\"\nset_contains_all = \"a,b\"", api.Constraint{LTarget: "${meta.tags}", Operand: "set_contains_all", RTarget: "a,b"}},
		{"attribute = \"${attr.kernel.name}\"\noperator = \"!=\"\nvalue = \"windows\"", api.Constraint{LTarget: "${attr.kernel.name}", Operand: "!=", RTarget: "windows"}},
	}
	for _, tc := range cases {
		t.Run(tc.body, func(t *testing.T) {
			job := mustParse(t, "job \"j\" {\n  constraint {\n"+tc.body+"\n  }\n}\n")
			require.Equal(t, []*api.Constraint{&tc.want}, job.Constraints)
		})
	}
}

func TestDecode_AffinityShorthands(t *testing.T) {
	job := mustParse(t, `
job "j" {
  affinity {
    attribute        = "${meta.features}"
    set_contains_any = "ssd,nvme"
    weight           = 50
  }
  affinity {
    attribute = "${attr.kernel.version}"
    version   = "> 5.0"
  }
}`)
	require.Equal(t, []*api.Affinity{
		{LTarget: "${meta.features}", Operand: "set_contains_any", RTarget: "ssd,nvme", Weight: ptr(int8(50))},
		{LTarget: "${attr.kernel.version}", Operand: "version", RTarget: "> 5.0", Weight: ptr(int8(50))},
	}, job.Affinities)
}

func TestDecode_Durations(t *testing.T) {
	cases := []struct {
		expr string
		want time.Duration
	}{
		{`"10s"`, 10 * time.Second},
		{`"1h30m"`, 90 * time.Minute},
		{`"250ms"`, 250 * time.Millisecond},
		{`5000000000`, 5 * time.Second},
		{`"${2 * 3}s"`, 6 * time.Second},
		{`0`, 0},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			task := onlyTask(t, mustParse(t, wrapTask("kill_timeout = "+tc.expr+"\nshutdown_delay = "+tc.expr)))
			require.Equal(t, tc.want, *task.KillTimeout)  // *time.Duration
			require.Equal(t, tc.want, task.ShutdownDelay) // time.Duration
		})
	}
}

func TestDecode_MetaAndEnvForms(t *testing.T) {
	cases := []struct {
		name, body string
		meta, env  map[string]string
	}{
		{"blocks", "meta {\n a = \"1\"\n}\nenv {\n B = 2\n}", map[string]string{"a": "1"}, map[string]string{"B": "2"}},
		{"attributes", "meta = { a = \"1\", \"x.y\" = true }\nenv = { \"B.C\" = 2 }",
			map[string]string{"a": "1", "x.y": "true"}, map[string]string{"B.C": "2"}},
		{"expression", "meta = merge({ a = \"1\" }, { b = \"2\" })", map[string]string{"a": "1", "b": "2"}, nil},
		{"empty block", "meta {\n}", map[string]string{}, nil},
		{"null entry skipped", "meta {\n a = null\n b = \"x\"\n}", map[string]string{"b": "x"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			task := onlyTask(t, mustParse(t, wrapTask(tc.body)))
			require.Equal(t, tc.meta, task.Meta)
			require.Equal(t, tc.env, task.Env)
		})
	}
}

func TestDecode_DriverConfig(t *testing.T) {
	task := onlyTask(t, mustParse(t, wrapTask(`
      driver = "docker"
      config {
        image      = "nginx:1.27"
        ports      = ["http"]
        args       = ["-p", 8080, 1.5, true]
        privileged = false
        labels {
          team = "web"
        }
        mount {
          type   = "bind"
          source = "local/a"
        }
        mount {
          type = "tmpfs"
          tmpfs_options {
            size = 100000
          }
        }
        logging {
          type = "json-file"
          config = {
            max-size = "10m"
          }
        }
        sysctl = { "net.core.somaxconn" = "16384" }
        entrypoint = null
      }`)))
	require.Equal(t, map[string]any{
		"image":      "nginx:1.27",
		"ports":      []any{"http"},
		"args":       []any{"-p", 8080, 1.5, true},
		"privileged": false,
		"labels":     []map[string]any{{"team": "web"}},
		"mount": []map[string]any{
			{"type": "bind", "source": "local/a"},
			{"type": "tmpfs", "tmpfs_options": []map[string]any{{"size": 100000}}},
		},
		"logging": []map[string]any{{"type": "json-file", "config": map[string]any{"max-size": "10m"}}},
		"sysctl":  map[string]any{"net.core.somaxconn": "16384"},
	}, task.Config)
}

func TestDecode_ConfigAsAttribute(t *testing.T) {
	task := onlyTask(t, mustParse(t, wrapTask(`config = { command = "/bin/echo", args = ["${NOMAD_TASK_DIR}"] }`)))
	require.Equal(t, map[string]any{"command": "/bin/echo", "args": []any{"${NOMAD_TASK_DIR}"}}, task.Config)
}

func TestDecode_DynamicBlocks(t *testing.T) {
	job := mustParse(t, `
variable "ports" {
  default = { http = 0, admin = 9000 }
}
locals {
  kernels = ["linux", "freebsd"]
  mounts  = [{ src = "a", dst = "/a" }, { src = "b", dst = "/b" }]
  volumes = ["data", "logs"]
}
job "j" {
  dynamic "constraint" {
    for_each = local.kernels
    content {
      attribute = "${attr.kernel.name}"
      operator  = "!="
      value     = constraint.value
    }
  }
  group "g" {
    network {
      dynamic "port" {
        for_each = var.ports
        labels   = [port.key]
        content {
          static = port.value
        }
      }
    }
    dynamic "volume" {
      for_each = local.volumes
      iterator = vol
      labels   = [vol.value]
      content {
        type   = "host"
        source = "${vol.value}-${NOMAD_ALLOC_INDEX}"
      }
    }
    task "t" {
      driver = "docker"
      config {
        image = "busybox"
        dynamic "mount" {
          for_each = local.mounts
          content {
            source = mount.value.src
            target = mount.value.dst
            dynamic "opt" {
              for_each = [mount.key]
              content {
                index = opt.value
              }
            }
          }
        }
      }
    }
  }
}`)
	require.Equal(t, []*api.Constraint{
		{LTarget: "${attr.kernel.name}", Operand: "!=", RTarget: "linux"},
		{LTarget: "${attr.kernel.name}", Operand: "!=", RTarget: "freebsd"},
	}, job.Constraints)
	net := job.TaskGroups[0].Networks[0]
	require.Equal(t, []api.Port{{Label: "http"}}, net.DynamicPorts)
	require.Equal(t, []api.Port{{Label: "admin", Value: 9000}}, net.ReservedPorts)
	require.Equal(t, map[string]*api.VolumeRequest{
		"data": {Name: "data", Type: "host", Source: "data-${NOMAD_ALLOC_INDEX}"},
		"logs": {Name: "logs", Type: "host", Source: "logs-${NOMAD_ALLOC_INDEX}"},
	}, job.TaskGroups[0].Volumes)
	require.Equal(t, map[string]any{
		"image": "busybox",
		"mount": []map[string]any{
			{"source": "a", "target": "/a", "opt": []map[string]any{{"index": 0}}},
			{"source": "b", "target": "/b", "opt": []map[string]any{{"index": 1}}},
		},
	}, job.TaskGroups[0].Tasks[0].Config)
}

func TestDecode_PortNormalization(t *testing.T) {
	job := mustParse(t, wrapGroup(`
    network {
      port "a" {}
      port "b" {
        static = 80
      }
      port "c" {
        to = 443
      }
      reserved_ports "d" {
        static = 22
      }
    }`))
	net := job.TaskGroups[0].Networks[0]
	require.Equal(t, []api.Port{{Label: "a"}, {Label: "c", To: 443}}, net.DynamicPorts)
	require.Equal(t, []api.Port{{Label: "d", Value: 22}, {Label: "b", Value: 80}}, net.ReservedPorts)
}
