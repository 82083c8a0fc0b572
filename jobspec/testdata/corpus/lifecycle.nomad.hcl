job "shop" {
  group "shop" {
    task "migrate" {
      lifecycle {
        hook    = "prestart"
        sidecar = false
      }
      driver = "docker"
      config {
        image   = "ghcr.io/example/shop:1.9"
        command = "bin/migrate"
      }
    }

    task "log-shipper" {
      lifecycle {
        hook    = "prestart"
        sidecar = true
      }
      driver = "docker"
      config {
        image = "grafana/alloy:v1.4.2"
      }
    }

    task "shop" {
      leader = true
      driver = "docker"
      config {
        image = "ghcr.io/example/shop:1.9"
      }
    }

    task "warm-cache" {
      lifecycle {
        hook = "poststart"
      }
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "curl -fsS http://127.0.0.1:8080/warm"]
      }
    }

    task "deregister" {
      lifecycle {
        hook = "poststop"
      }
      driver = "exec"
      config {
        command = "/usr/local/bin/deregister"
      }
    }
  }
}
