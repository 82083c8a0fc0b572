# Prune unused images on every client once.
job "docker-prune" {
  type        = "sysbatch"
  datacenters = ["dc1", "dc2"]
  node_pool   = "all"

  group "prune" {
    task "prune" {
      driver = "raw_exec"
      user   = "root"

      config {
        command = "docker"
        args    = ["image", "prune", "-af", "--filter", "until=168h"]
      }

      logs {
        max_files     = 2
        max_file_size = 5
      }
    }
  }
}
