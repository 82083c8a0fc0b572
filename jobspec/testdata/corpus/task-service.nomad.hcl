job "legacy-metrics" {
  group "g" {
    network {
      port "metrics" {}
    }

    task "exporter" {
      driver = "docker"
      config {
        image = "prom/statsd-exporter:v0.27.1"
        ports = ["metrics"]
      }

      service {
        name         = "statsd-exporter"
        port         = "metrics"
        provider     = "nomad"
        address_mode = "host"
        tags         = ["prometheus"]

        check {
          type     = "http"
          path     = "/metrics"
          interval = "20s"
          timeout  = "5s"
          check_restart {
            limit = 2
            grace = "1m"
          }
        }
      }

      restart {
        attempts         = 3
        delay            = "15s"
        render_templates = true
      }

      meta {
        scrape = "true"
      }
    }

    meta {
      owner = "sre"
    }
  }
}
