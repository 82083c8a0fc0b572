# Public website: three nginx containers behind the load balancer.
job "web" {
  datacenters = ["eu-west-1a", "eu-west-1b"]
  type        = "service"

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  update {
    max_parallel     = 1
    min_healthy_time = "10s"
    healthy_deadline = "3m"
    auto_revert      = true
  }

  group "frontend" {
    count = 3

    network {
      port "http" {
        to = 80
      }
    }

    service {
      name     = "web"
      port     = "http"
      provider = "nomad"
      tags     = ["public", "nginx"]

      check {
        type     = "http"
        path     = "/healthz"
        interval = "10s"
        timeout  = "2s"
      }
    }

    task "nginx" {
      driver = "docker"

      config {
        image = "nginx:1.27-alpine"
        ports = ["http"]
      }

      resources {
        cpu    = 200
        memory = 128
      }
    }
  }
}
