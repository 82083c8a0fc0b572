# A one-task job without a group block: the task gets a group of its own name.
job "hello" {
  datacenters = ["dc1"]
  type        = "batch"

  task "hello" {
    driver = "exec"
    config {
      command = "/bin/echo"
      args    = ["hello", "world"]
    }
    resources {
      cpu    = 20
      memory = 16
    }
  }
}
