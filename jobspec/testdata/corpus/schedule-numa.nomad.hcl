job "office-hours" {
  group "g" {
    task "dashboard" {
      driver = "docker"
      config {
        image = "ghcr.io/example/dashboard:4"
      }

      # Run only on weekdays from 9:00 to 17:00 in Berlin.
      schedule {
        cron {
          start    = "0 9 * * 1-5"
          end      = "0 17"
          timezone = "Europe/Berlin"
        }
      }

      resources {
        cores  = 4
        memory = 4096
        numa {
          affinity = "require"
          devices  = ["nvidia/gpu"]
        }
      }
    }
  }
}
