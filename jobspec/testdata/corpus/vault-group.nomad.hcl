job "ledger" {
  group "ledger" {
    # Every task of the group gets this one unless it has its own.
    vault {
      role      = "ledger"
      namespace = "finance"
      env       = false
    }

    task "api" {
      driver = "docker"
      config {
        image = "ghcr.io/example/ledger-api:1.2"
      }
    }

    task "worker" {
      driver = "docker"
      config {
        image = "ghcr.io/example/ledger-worker:1.2"
      }

      vault {
        policies     = ["ledger-worker"]
        disable_file = true
      }
    }
  }
}
