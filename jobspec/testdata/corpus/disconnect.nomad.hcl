job "edge-proxy" {
  group "proxy" {
    count = 4

    disconnect {
      lost_after = "1h"
      replace    = false
      reconcile  = "keep_original"
    }

    ephemeral_disk {
      size = 500
    }

    shutdown_delay   = "10s"
    max_run_duration = "720h"

    task "haproxy" {
      driver         = "docker"
      kill_timeout   = "30s"
      kill_signal    = "SIGUSR1"
      shutdown_delay = "5s"

      config {
        image = "haproxy:3.0"
      }

      logs {
        disabled = true
      }
    }
  }

  group "batchy" {
    disconnect {
      stop_on_client_after = "5m"
    }
    prevent_reschedule_on_lost = true

    task "sync" {
      driver = "exec"
      config {
        command = "/usr/local/bin/sync"
      }
    }
  }
}
