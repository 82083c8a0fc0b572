# A sysbatch job that runs a cleanup script once on every Linux node.
job "cleanup" {
  type        = "sysbatch"
  datacenters = ["dc1", "dc2"]

  constraint {
    attribute = "${attr.kernel.name}"
    operator  = "="
    value     = "linux"
  }

  group "cleanup" {
    reschedule {
      attempts  = 0
      unlimited = false
    }

    task "prune" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "find /tmp -mtime +7 -delete; echo done on ${node.unique.name}"]
      }

      resources {
        cpu    = 50
        memory = 32
      }

      logs {
        max_files     = 2
        max_file_size = 5
      }
    }
  }
}
