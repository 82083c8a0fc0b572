job "frontend" {
  spread {
    attribute = "${node.datacenter}"
    weight    = 100

    target "us-east-1" {
      percent = 60
    }

    target "us-west-2" {
      percent = 40
    }
  }

  group "frontend" {
    count = 10

    spread {
      attribute = "${meta.rack}"
    }

    task "frontend" {
      driver = "docker"
      config {
        image = "ghcr.io/example/frontend:7.1"
      }
    }
  }
}
