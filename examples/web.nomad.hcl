# A system job: one "web" allocation on every node, rolled out as a
# deployment. Try: drover job run -var version=2 examples/web.nomad.hcl
variable "version" {
  type    = string
  default = "1"
}

variable "canary" {
  type    = number
  default = 0
}

variable "command" {
  type    = string
  default = "exec sleep 86400"
}

job "web" {
  type        = "system"
  datacenters = ["*"]

  update {
    max_parallel      = 2
    canary            = var.canary
    health_check      = "task_states"
    min_healthy_time  = "2s"
    healthy_deadline  = "20s"
    progress_deadline = "1m"
    auto_revert       = true
  }

  group "web" {
    restart {
      attempts = 0
      mode     = "fail"
    }

    task "server" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo \"web version ${var.version} on ${node.unique.name}\"; ${var.command}"]
      }

      env {
        VERSION = var.version
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
