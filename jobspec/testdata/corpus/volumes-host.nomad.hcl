job "postgres" {
  group "db" {
    volume "pgdata" {
      type      = "host"
      source    = "pgdata"
      read_only = false
    }

    volume "certs" {
      type      = "host"
      source    = "tls-certs"
      read_only = true
    }

    task "postgres" {
      driver = "docker"

      volume_mount {
        volume      = "pgdata"
        destination = "/var/lib/postgresql/data"
      }

      volume_mount {
        volume           = "certs"
        destination      = "/etc/ssl/pg"
        read_only        = true
        propagation_mode = "private"
      }

      config {
        image = "postgres:16"
      }

      env {
        POSTGRES_DB = "app"
      }
    }
  }
}
