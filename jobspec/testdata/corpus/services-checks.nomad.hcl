job "payments" {
  group "payments" {
    network {
      port "http" {}
      port "grpc" {}
    }

    service {
      name        = "payments"
      port        = "http"
      tags        = ["v3", "traefik.enable=true"]
      canary_tags = ["canary"]
      provider    = "consul"

      meta {
        version = "3.2.0"
      }

      check {
        name     = "http-ready"
        type     = "http"
        path     = "/ready"
        method   = "GET"
        interval = "10s"
        timeout  = "2s"
        header {
          Authorization = ["Bearer health"]
        }

        check_restart {
          limit           = 3
          grace           = "30s"
          ignore_warnings = true
        }
      }

      check {
        type                     = "grpc"
        port                     = "grpc"
        grpc_service             = "payments.v3.Health"
        grpc_use_tls             = true
        tls_skip_verify          = true
        interval                 = "15s"
        timeout                  = "3s"
        success_before_passing   = 2
        failures_before_critical = 3
      }

      check {
        name     = "queue-depth"
        type     = "script"
        command  = "/usr/local/bin/check-queue"
        args     = ["--max", "100"]
        task     = "payments"
        interval = "30s"
        timeout  = "5s"
        on_update = "ignore_warnings"
      }
    }

    task "payments" {
      driver = "docker"
      config {
        image = "ghcr.io/example/payments:3.2.0"
        ports = ["http", "grpc"]
      }
    }
  }
}
