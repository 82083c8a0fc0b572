job "billing" {
  group "billing" {
    task "billing" {
      driver = "docker"
      config {
        image = "ghcr.io/example/billing:5.0"
      }

      vault {
        policies      = ["billing-read", "pki-issue"]
        change_mode   = "signal"
        change_signal = "SIGUSR1"
      }

      template {
        data        = "{{ with secret \"database/creds/billing\" }}{{ .Data.password }}{{ end }}"
        destination = "secrets/db-password"
      }
    }
  }
}
