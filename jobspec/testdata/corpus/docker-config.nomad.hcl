job "grafana-agent" {
  group "agent" {
    network {
      port "http" {
        to = 12345
      }
    }

    task "agent" {
      driver = "docker"

      config {
        image      = "grafana/agent:v0.43.3"
        ports      = ["http"]
        force_pull = true
        entrypoint = ["/bin/grafana-agent"]
        args       = ["run", "/etc/agent/config.river"]
        hostname   = "agent-${NOMAD_ALLOC_INDEX}"
        dns_servers = ["127.0.0.1"]
        cap_add    = ["net_raw"]
        labels = {
          "com.example.team" = "observability"
        }

        auth {
          username = "robot"
          password = "not-a-real-password"
        }
        auth_soft_fail = true

        logging {
          type = "journald"
          config {
            tag = "grafana-agent"
          }
        }

        mount {
          type     = "bind"
          source   = "local/config.river"
          target   = "/etc/agent/config.river"
          readonly = true
        }

        mount {
          type   = "volume"
          source = "agent-wal"
          target = "/var/lib/agent"
          volume_options {
            no_copy = false
            labels {
              purpose = "wal"
            }
          }
        }

        ulimit {
          nofile = "65536:65536"
        }

        sysctl = {
          "net.core.somaxconn" = "16384"
        }
      }
    }
  }
}
