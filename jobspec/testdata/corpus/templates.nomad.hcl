job "api" {
  group "api" {
    network {
      port "http" {}
    }

    task "api" {
      driver = "docker"

      config {
        image = "ghcr.io/example/api:2.4.1"
        ports = ["http"]
      }

      # Configuration rendered from Nomad variables; reload on change.
      template {
        data        = <<-EOT
          {{ with nomadVar "nomad/jobs/api" }}
          DB_PASSWORD={{ .db_password }}
          {{ end }}
        EOT
        destination = "secrets/app.env"
        env         = true
        change_mode = "restart"
      }

      template {
        source        = "local/app.conf.tpl"
        destination   = "local/app.conf"
        change_mode   = "signal"
        change_signal = "SIGHUP"
        perms         = "0640"
        splay         = "10s"
        left_delimiter  = "[["
        right_delimiter = "]]"

        wait {
          min = "5s"
          max = "30s"
        }
      }

      template {
        data        = "{{ key \"config/api/feature-flags\" }}"
        destination = "local/flags.json"
        change_mode = "script"
        error_on_missing_key = true

        change_script {
          command = "/local/reload.sh"
          args    = ["--flags", "/local/flags.json"]
        }
      }

      artifact {
        source      = "https://releases.example.com/api/reload.sh"
        destination = "local/"
        mode        = "file"
      }
    }
  }
}
