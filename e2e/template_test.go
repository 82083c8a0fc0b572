package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// templateJobHCL has two raw_exec tasks rendering the job's variable
// nomad/jobs/tmpl, read with their workload identity: "app" gets it in a
// file and, through an env = true template, in its environment, and is
// restarted when it changes; "sig" traps SIGUSR1 (its change_signal) and
// appends the file's new content to a marker.
const templateJobHCL = `
job "tmpl" {
  type = "service"
  group "g" {
    task "app" {
      driver = "raw_exec"
      template {
        data        = "{{ with nomadVar \"nomad/jobs/tmpl\" }}GREETING={{ .greeting }}{{ end }}\n"
        destination = "${NOMAD_SECRETS_DIR}/app.env"
        env         = true
        change_mode = "restart"
        splay       = "0s"
      }
      template {
        data        = "{{ with nomadVar \"nomad/jobs/tmpl\" }}{{ .greeting }}{{ end }}"
        destination = "local/greeting.txt"
        change_mode = "restart"
        splay       = "0s"
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "echo \"START env=$GREETING file=$(cat local/greeting.txt)\"; exec sleep 600"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
    task "sig" {
      driver = "raw_exec"
      template {
        data          = "{{ with nomadVar \"nomad/jobs/tmpl\" }}{{ .greeting }}{{ end }}"
        destination   = "local/g.txt"
        change_mode   = "signal"
        change_signal = "SIGUSR1"
        splay         = "0s"
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "trap 'echo \"SIGNALLED $(cat local/g.txt)\" >> local/marker' USR1; echo ready > local/ready; while true; do sleep 0.2 & wait $!; done"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`

// TestTemplates: with ACLs on, templates read the job's variable with the
// task's workload identity before the tasks start: a file, and with
// env = true the environment. drover var put of a new value re-renders:
// the restart task starts again with the new value in both, the signal
// task gets SIGUSR1 (its trap writes the new value) and keeps running.
func TestTemplates(t *testing.T) {
	s1 := newServer(t, serverSpec{name: "tmpl-s1", bootstrapExpect: 1, top: "acl {\n  enabled = true\n}"})
	waitLeader(t, s1)
	root, _, err := s1.client(t).ACLTokens().Bootstrap(nil)
	require.NoError(t, err)
	mgmt := tokenClient(t, s1.httpAddr(), root.SecretID)
	cl := newClientAgentWith(t, "tmpl-c1", "", "acl {\n  enabled = true\n}", s1.httpHostPort())
	waitReadyNodes(t, mgmt, 1)

	code, out := droverAs(t, s1.httpAddr(), root.SecretID, "var", "put", "-out=none", "nomad/jobs/tmpl", "greeting=hello")
	require.Equal(t, 0, code, out)
	code, out = droverAs(t, s1.httpAddr(), root.SecretID, "job", "run", "-detach", writeJobFile(t, templateJobHCL))
	require.Equal(t, 0, code, out)

	var alloc *api.AllocationListStub
	running := func() bool {
		allocs, _, err := mgmt.Jobs().Allocations("tmpl", false, nil)
		if err != nil || len(allocs) != 1 {
			return false
		}
		alloc = allocs[0]
		return alloc.ClientStatus == "running" && alloc.TaskStates["app"] != nil && alloc.TaskStates["app"].State == "running" &&
			alloc.TaskStates["sig"] != nil && alloc.TaskStates["sig"].State == "running"
	}
	if !assert.Eventually(t, running, 30*time.Second, 100*time.Millisecond) {
		t.Fatalf("the tasks never ran: %s\nclient log:\n%s", describeTasks(alloc), lastLines(cl.logs(), 40))
	}

	logs := func() string {
		status, body := getWithToken(t, s1.httpAddr()+"/v1/client/fs/logs/"+alloc.ID+"?task=app&type=stdout&plain=true", root.SecretID)
		require.Equal(t, http.StatusOK, status, body)
		return body
	}
	require.Eventually(t, func() bool { return strings.Contains(logs(), "START env=hello file=hello") },
		15*time.Second, 100*time.Millisecond, "the first start sees the variable in its env and file")
	sigDir := filepath.Join(cl.dataDir, "alloc", alloc.ID, "sig", "local")
	require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(sigDir, "ready")); return err == nil },
		15*time.Second, 50*time.Millisecond, "the signal task has set its trap")

	code, out = droverAs(t, s1.httpAddr(), root.SecretID, "var", "put", "-force", "-out=none", "nomad/jobs/tmpl", "greeting=bye")
	require.Equal(t, 0, code, out)

	require.Eventually(t, func() bool { return strings.Contains(logs(), "START env=bye file=bye") },
		20*time.Second, 100*time.Millisecond, "the restart task starts again with the new value")
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(sigDir, "marker"))
		return strings.Contains(string(b), "SIGNALLED bye")
	}, 20*time.Second, 50*time.Millisecond, "the signal task got SIGUSR1 after the new value was rendered")

	// The client reports the events to the servers in batches.
	var app, sig *api.TaskState
	require.Eventually(t, func() bool {
		a, _, err := mgmt.Allocations().Info(alloc.ID, nil)
		if err != nil || a.TaskStates["app"] == nil || a.TaskStates["sig"] == nil {
			return false
		}
		app, sig = a.TaskStates["app"], a.TaskStates["sig"]
		return app.State == "running" && app.Restarts == 1 && hasTaskEvent(sig, "Signaling", "Template re-rendered")
	}, 10*time.Second, 100*time.Millisecond, "the restart task restarted once, the signal task was signalled")
	require.True(t, hasTaskEvent(app, "Restart Signaled", "Template with change_mode restart re-rendered"))
	require.Zero(t, sig.Restarts, "the signal task was not restarted")
	require.Equal(t, "running", sig.State)

	code, out = droverAs(t, s1.httpAddr(), root.SecretID, "job", "stop", "-purge", "-detach", "tmpl")
	require.Equal(t, 0, code, out)
	require.Eventually(t, func() bool {
		a, _, err := mgmt.Allocations().Info(alloc.ID, nil)
		return err == nil && a.ClientStatus == "complete"
	}, 30*time.Second, 100*time.Millisecond)
}

// describeTasks lists the events of an allocation's tasks.
func describeTasks(a *api.AllocationListStub) string {
	if a == nil {
		return "no allocation"
	}
	var b strings.Builder
	b.WriteString(a.ClientStatus + "\n")
	for name, st := range a.TaskStates {
		for _, e := range st.Events {
			b.WriteString(name + ": " + e.Type + ": " + e.DisplayMessage + "\n")
		}
	}
	return b.String()
}

func hasTaskEvent(st *api.TaskState, typ, msg string) bool {
	for _, e := range st.Events {
		if e.Type == typ && strings.Contains(e.DisplayMessage, msg) {
			return true
		}
	}
	return false
}
