job "mesh-apps" {
  group "frontend" {
    network {
      mode = "bridge"
    }

    service {
      name = "frontend"
      port = "3000"

      connect {
        sidecar_service {
          proxy {
            transparent_proxy {
              exclude_outbound_ports = [53]
              exclude_uids           = ["101"]
              no_dns                 = false
            }

            upstreams {
              destination_name      = "payments"
              destination_namespace = "billing"
              local_bind_port       = 9500
              datacenter            = "dc2"
              mesh_gateway {
                mode = "local"
              }
            }
          }
        }
      }
    }

    task "frontend" {
      driver = "docker"
      config {
        image = "ghcr.io/example/frontend:12"
      }
    }
  }

  group "egress" {
    network {
      mode = "bridge"
    }

    service {
      name = "legacy-db-gateway"

      connect {
        gateway {
          terminating {
            service {
              name    = "legacy-db"
              ca_file = "/etc/ssl/ca.pem"
              sni     = "db.legacy.internal"
            }
          }
        }
      }
    }
  }
}
