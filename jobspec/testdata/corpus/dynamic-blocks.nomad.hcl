variable "ports" {
  type = map(number)
  default = {
    http    = 8080
    metrics = 9090
  }
}

variable "extra_env" {
  type = map(string)
  default = {
    LOG_LEVEL = "info"
    REGION    = "eu"
  }
}

locals {
  sidecars = ["fluentbit", "statsd"]
}

job "gateway" {
  group "gateway" {
    network {
      dynamic "port" {
        for_each = var.ports
        labels   = [port.key]
        content {
          to = port.value
        }
      }
    }

    dynamic "service" {
      for_each = var.ports
      iterator = svc
      content {
        name     = "gateway-${svc.key}"
        port     = svc.key
        provider = "nomad"
      }
    }

    task "gateway" {
      driver = "docker"
      config {
        image = "envoyproxy/envoy:v1.31.2"

        dynamic "mount" {
          for_each = ["/etc/envoy", "/var/run/envoy"]
          content {
            type   = "bind"
            source = mount.value
            target = mount.value
          }
        }
      }

      env {
        NODE = "${node.unique.name}"
      }

      dynamic "template" {
        for_each = var.extra_env
        content {
          data        = "${template.key}=${template.value}\n"
          destination = "local/env.d/${lower(template.key)}"
        }
      }
    }

    dynamic "task" {
      for_each = local.sidecars
      labels   = [task.value]
      content {
        driver = "docker"
        lifecycle {
          hook    = "poststart"
          sidecar = true
        }
        config {
          image = "ghcr.io/example/${task.value}:latest"
        }
      }
    }
  }
}
