job "report" {
  type = "batch"

  meta {
    release = "2026.11"
  }

  group "render" {
    task "render" {
      driver = "raw_exec"

      # A release archive, checked and unpacked into local/tool.
      artifact {
        source      = "https://releases.example.com/tool/${NOMAD_META_release}/tool_linux_amd64.tar.gz"
        destination = "local/tool"
        options {
          checksum = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        }
      }

      # One file, kept as it is, shared with the group's other tasks.
      artifact {
        source      = "https://config.example.com/report/settings.json"
        destination = "../alloc/settings.json"
        mode        = "file"
        headers {
          Authorization = "Bearer ${NOMAD_META_release}"
        }
      }

      # A repository at a tag, given to the task's user.
      artifact {
        source      = "git::https://git.example.com/ops/templates.git"
        destination = "local/templates"
        chown       = true
        options {
          ref   = "v1.4.0"
          depth = 1
        }
      }

      # An archive kept packed.
      artifact {
        source = "https://data.example.com/seed.tar.gz"
        options {
          archive = false
        }
      }

      config {
        command = "local/tool/bin/render"
        args    = ["--settings", "${NOMAD_ALLOC_DIR}/settings.json"]
      }

      resources {
        cpu    = 200
        memory = 128
      }
    }
  }
}
