# Written years ago and still parsed by HCL2: task-level network, the
# long form of distinct_hosts, static ports under resources.
job "legacy-app" {
  datacenters = ["dc1"]

  group "app" {
    count = 2

    constraint {
      operator = "distinct_hosts"
      value    = "true"
    }

    task "app" {
      driver = "raw_exec"

      config {
        command = "/opt/legacy/bin/app"
      }

      resources {
        cpu    = 250
        memory = 128
        disk   = 300

        network {
          mbits = 10
          port "http" {
            static = 8080
          }
          port "rpc" {}
        }
      }

      logs {
        max_files     = 5
        max_file_size = 10
      }
    }
  }
}
