package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/testutil/images"
	"github.com/drover-project/drover/testutil/registry"
)

// dockerTaskAPIJobHCL: task "api" calls the task API from inside its
// container with its workload identity; task "web" serves on a port of its
// own (legacy, task-level) network block, mapped by port_map to the port
// the server listens on in the container.
const dockerTaskAPIJobHCL = `
job "dtapi" {
  group "g" {
    task "api" {
      driver = "docker"
      identity {
        env = true
      }
      config {
        image = %[1]q
        args  = ["probe", "taskapi", "/v1/job/dtapi", "taskapi", "/v1/job/dtapi?namespace=other", "sleep"]
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
    task "web" {
      driver = "docker"
      config {
        image = %[1]q
        port_map {
          db = 8080
        }
      }
      resources {
        cpu    = 20
        memory = 32
        network {
          port "db" {}
        }
      }
    }
  }
}
`

// TestDockerTaskAPIAndTaskNetworkPortMap: a Docker task reaches the task
// API at NOMAD_UNIX_ADDR (its secrets dir's socket, at /secrets/api.sock in
// the container), authenticated by its workload identity: it reads its own
// job and is refused one of another namespace. A port of a task-level network block is
// published by port_map to the container port the server listens on.
func TestDockerTaskAPIAndTaskNetworkPortMap(t *testing.T) {
	requireDocker(t)
	reg := registry.Start(t, registry.Options{})
	img, err := images.Build(images.BuildOptions{Version: "dtapi", Seed: time.Now().UnixNano()})
	require.NoError(t, err)
	ref := reg.Ref("drover-e2e/dtapi", "v1")
	digest, err := images.Push(img, ref)
	require.NoError(t, err)
	t.Cleanup(func() {
		removeImages(t, []string{ref, ref + "@" + digest, strings.TrimSuffix(ref, ":v1") + "@" + digest})
	})

	s1, _, root, mgmt := aclServerAndClient(t, "dtapi-client")
	var allocIDs []string
	t.Cleanup(func() {
		_, _ = droverAs(t, s1.httpAddr(), root.SecretID, "job", "stop", "-purge", "-yes", "dtapi")
		removeAllocContainers(t, allocIDs)
	})
	code, out := droverAs(t, s1.httpAddr(), root.SecretID, "job", "run", "-detach", writeJobFile(t, fmt.Sprintf(dockerTaskAPIJobHCL, ref)))
	require.Equal(t, 0, code, out)

	var alloc *api.Allocation
	require.Eventually(t, func() bool {
		stubs, _, err := mgmt.Jobs().Allocations("dtapi", false, nil)
		if err != nil || len(stubs) != 1 {
			return false
		}
		if len(allocIDs) == 0 {
			allocIDs = append(allocIDs, stubs[0].ID)
		}
		require.NotEqual(t, "failed", stubs[0].ClientStatus)
		if stubs[0].ClientStatus != "running" {
			return false
		}
		alloc, _, err = mgmt.Allocations().Info(stubs[0].ID, nil)
		return err == nil
	}, 60*time.Second, 200*time.Millisecond)

	logsPath := "/v1/client/fs/logs/" + alloc.ID + "?task=api&type=stdout&plain=true"
	var logs string
	require.Eventually(t, func() bool {
		_, logs = getWithToken(t, s1.httpAddr()+logsPath, root.SecretID)
		return strings.Count(logs, "taskapi ") >= 2
	}, 30*time.Second, 200*time.Millisecond)
	parts := strings.SplitN(logs, "taskapi ", 3)
	require.Len(t, parts, 3, logs)
	require.True(t, strings.HasPrefix(parts[1], "200\n"), "its own job: %s", logs)
	require.Contains(t, parts[1], `"ID":"dtapi"`)
	require.True(t, strings.HasPrefix(parts[2], "403\n"), "a job of another namespace: %s", logs)

	// The task network's port: host side from the allocation, container
	// side port_map's 8080.
	tr := alloc.AllocatedResources.Tasks["web"]
	require.NotNil(t, tr)
	require.Len(t, tr.Networks, 1)
	require.Len(t, tr.Networks[0].DynamicPorts, 1)
	host := net.JoinHostPort(tr.Networks[0].IP, strconv.Itoa(tr.Networks[0].DynamicPorts[0].Value))
	var body string
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + host + "/")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 200*time.Millisecond)
	require.Equal(t, "version dtapi\n", body)
	t.Logf("task API from the container:\n%s\nport_map on %s: %q", logs, host, body)
}
