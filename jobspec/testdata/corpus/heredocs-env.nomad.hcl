job "heredocs" {
  meta = {
    "team.owner" = "platform"
    cost_center  = "cc-1042"
  }

  group "g" {
    task "t" {
      driver = "raw_exec"

      config {
        command = "/bin/bash"
        args = ["-c", <<-EOS
          set -euo pipefail
          echo "alloc ${NOMAD_ALLOC_ID} on ${attr.unique.hostname}"
          exec /usr/local/bin/app --port "${NOMAD_PORT_http}"
        EOS
        ]
      }

      env {
        APP_ENV      = "production"
        DC           = "${node.datacenter}"
        RACK         = "${meta.rack}"
        LITERAL      = "$${NOT_INTERPOLATED}"
        GREETING     = <<EOT
multi
line
EOT
      }
    }
  }
}
