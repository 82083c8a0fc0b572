job "autoscaled-api" {
  group "api" {
    count = 2

    scaling {
      enabled = true
      min     = 2
      max     = 20

      policy {
        evaluation_interval = "30s"
        cooldown            = "2m"

        check "cpu" {
          source = "nomad-apm"
          query  = "avg_cpu-allocated"

          strategy "target-value" {
            target = 70
          }
        }
      }
    }

    task "api" {
      driver = "docker"
      config {
        image = "ghcr.io/example/api:5.5"
      }
      resources {
        cpu        = 500
        memory     = 256
        memory_max = 768
      }
    }
  }
}
