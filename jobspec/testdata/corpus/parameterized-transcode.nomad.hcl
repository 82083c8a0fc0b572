job "transcode" {
  type = "batch"

  parameterized {
    payload       = "required"
    meta_required = ["input"]
    meta_optional = ["profile"]
  }

  meta {
    profile = "1080p"
  }

  group "transcode" {
    task "ffmpeg" {
      driver = "docker"

      config {
        image = "jrottenberg/ffmpeg:6.1-alpine"
        args  = ["-i", "${NOMAD_META_input}", "-preset", "${NOMAD_META_profile}", "local/out.mp4"]
      }

      dispatch_payload {
        file = "job.json"
      }

      resources {
        cpu    = 2000
        memory = 1024
      }
    }
  }
}
