job "ingress" {
  group "ingress" {
    network {
      mode = "bridge"
      port "inbound" {
        static = 8080
        to     = 8080
      }
    }

    service {
      name = "ingress-gateway"
      port = "8080"

      connect {
        gateway {
          proxy {
            connect_timeout = "500ms"
          }

          ingress {
            listener {
              port     = 8080
              protocol = "tcp"
              service {
                name = "web"
              }
            }
          }
        }
      }
    }
  }

  group "web" {
    network {
      mode = "bridge"
      port "health" {
        to = -1
      }
    }

    service {
      name = "web"
      port = "9090"

      check {
        type     = "http"
        path     = "/health"
        port     = "health"
        expose   = true
        interval = "10s"
        timeout  = "2s"
      }

      connect {
        sidecar_service {
          tags = ["mesh"]
          proxy {
            local_service_port = 9090
            expose {
              path {
                path            = "/metrics"
                protocol        = "http"
                local_path_port = 9102
                listener_port   = "health"
              }
            }
          }
        }

        sidecar_task {
          resources {
            cpu    = 100
            memory = 64
          }
        }
      }
    }

    task "web" {
      driver = "docker"
      config {
        image = "ghcr.io/example/web:2"
      }
    }
  }
}
