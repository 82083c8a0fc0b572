job "global-api" {
  multiregion {
    strategy {
      max_parallel = 1
      on_failure   = "fail_all"
    }

    region "west" {
      count       = 2
      datacenters = ["west-1"]
      meta {
        tier = "primary"
      }
    }

    region "east" {
      count       = 1
      datacenters = ["east-1", "east-2"]
      node_pool   = "edge"
    }
  }

  group "api" {
    count = 0

    task "api" {
      driver = "docker"
      config {
        image = "ghcr.io/example/global-api:1.0"
      }
    }
  }
}
