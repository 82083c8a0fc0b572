job "report" {
  type = "batch"

  periodic {
    cron             = "@hourly"
    prohibit_overlap = false
    enabled          = true
  }

  group "report" {
    task "generate" {
      driver = "exec"

      config {
        command = "/opt/report/bin/generate"
      }
    }
  }
}
