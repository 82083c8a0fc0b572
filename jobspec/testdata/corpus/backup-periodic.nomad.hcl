# Nightly database backup, never two at once.
job "pg-backup" {
  type        = "batch"
  datacenters = ["dc1"]

  periodic {
    crons            = ["30 2 * * *"]
    prohibit_overlap = true
    time_zone        = "Europe/Berlin"
  }

  group "backup" {
    restart {
      attempts = 2
      interval = "30m"
      delay    = "1m"
      mode     = "fail"
    }

    reschedule {
      attempts  = 0
      unlimited = false
    }

    task "dump" {
      driver = "raw_exec"

      config {
        command = "/usr/local/bin/pg-backup.sh"
        args    = ["--target", "s3://backups/pg", "--keep", "14"]
      }

      env {
        PGHOST = "db.service.consul"
        PGUSER = "backup"
      }

      resources {
        cpu    = 500
        memory = 256
      }
    }
  }
}
