job "node-exporter" {
  datacenters = ["*"]
  type        = "system"
  priority    = 80

  group "exporter" {
    network {
      mode = "host"
      port "metrics" {
        static = 9100
      }
    }

    service {
      name     = "node-exporter"
      port     = "metrics"
      provider = "nomad"

      check {
        type     = "tcp"
        interval = "30s"
        timeout  = "5s"
      }
    }

    task "node-exporter" {
      driver = "docker"

      config {
        image        = "quay.io/prometheus/node-exporter:v1.8.2"
        network_mode = "host"
        args         = ["--path.rootfs=/host"]
        volumes      = ["/:/host:ro,rslave"]
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
