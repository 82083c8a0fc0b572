job "whoami" {
  group "whoami" {
    network {
      mode     = "bridge"
      hostname = "whoami-${NOMAD_ALLOC_INDEX}"

      port "http" {
        to = 8080
      }

      port "admin" {
        static       = 9901
        to           = 9901
        host_network = "private"
      }

      dns {
        servers  = ["10.0.0.2", "1.1.1.1"]
        searches = ["service.consul"]
        options  = ["ndots:2"]
      }
    }

    task "whoami" {
      driver = "docker"
      config {
        image = "traefik/whoami:v1.10"
        args  = ["--port", "8080"]
      }
    }
  }
}
