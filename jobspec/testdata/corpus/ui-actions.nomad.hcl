job "wiki" {
  ui {
    description = "Team wiki. Owned by **docs-team**."

    link {
      label = "Runbook"
      url   = "https://runbooks.example.com/wiki"
    }

    link {
      label = "Dashboard"
      url   = "https://grafana.example.com/d/wiki"
    }
  }

  group "wiki" {
    task "wiki" {
      driver = "docker"
      config {
        image = "requarks/wiki:2.5"
      }

      action "rebuild-search" {
        command = "/usr/local/bin/node"
        args    = ["server/tools/rebuild-search.js"]
      }

      action "whoami" {
        command = "id"
      }
    }
  }
}
