# A system job running a small HTTP server on every client node.
variable "datacenters" {
  type        = list(string)
  default     = ["dc1"]
  description = "Datacenters to run in."
}

variable "http_port" {
  type    = number
  default = 8080
}

locals {
  service_name = "web-${var.http_port}"
}

job "web" {
  type        = "system"
  datacenters = var.datacenters
  node_pool   = "default"

  meta {
    owner = "platform"
  }

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  update {
    max_parallel     = 1
    canary           = 1
    min_healthy_time = "10s"
    healthy_deadline = "3m"
    auto_revert      = true
  }

  group "web" {
    network {
      port "http" {
        static = var.http_port
      }
    }

    service {
      name     = local.service_name
      port     = "http"
      provider = "nomad"
      tags     = ["web", "${node.unique.name}"]

      check {
        name     = "alive"
        type     = "http"
        path     = "/health"
        interval = "10s"
        timeout  = "2s"
      }
    }

    restart {
      attempts = 3
      interval = "5m"
      delay    = "15s"
      mode     = "delay"
    }

    task "server" {
      driver = "raw_exec"

      config {
        command = "/usr/bin/python3"
        args    = ["-m", "http.server", "${NOMAD_PORT_http}", "--directory", "${NOMAD_ALLOC_DIR}/www"]
      }

      env {
        LISTEN_ADDR = "${attr.unique.network.ip-address}:${NOMAD_PORT_http}"
      }

      resources {
        cpu    = 100
        memory = 64
      }

      kill_timeout = "20s"
    }
  }
}
