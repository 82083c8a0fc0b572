job "checkout-web" {
  region      = "eu"
  namespace   = "shop"
  priority    = 70
  all_at_once = false

  update {
    stagger           = "30s"
    max_parallel      = 2
    health_check      = "checks"
    min_healthy_time  = "15s"
    healthy_deadline  = "5m"
    progress_deadline = "10m"
    canary            = 2
    auto_promote      = true
    auto_revert       = true
  }

  migrate {
    max_parallel     = 1
    health_check     = "task_states"
    min_healthy_time = "20s"
    healthy_deadline = "4m"
  }

  reschedule {
    delay          = "30s"
    delay_function = "exponential"
    max_delay      = "10m"
    unlimited      = true
  }

  group "web" {
    count = 6

    update {
      max_parallel = 3
      canary       = 1
    }

    task "web" {
      driver = "docker"
      config {
        image = "ghcr.io/example/checkout-web:9.3.0"
      }
    }
  }
}
