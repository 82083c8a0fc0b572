job "reporting" {
  vault {
    policies    = ["reporting"]
    change_mode = "noop"
  }

  group "ingest" {
    task "ingest" {
      driver = "exec"
      config {
        command = "/opt/reporting/ingest"
      }
    }
  }

  group "render" {
    vault {
      policies = ["reporting-render"]
    }

    task "render" {
      driver = "exec"
      config {
        command = "/opt/reporting/render"
      }
    }
  }
}
