variable "workers" {
  type = list(object({
    name   = string
    queue  = string
    memory = number
    env    = map(string)
  }))
  default = [
    { name = "mail", queue = "emails", memory = 128, env = { SMTP_HOST = "smtp.internal" } },
    { name = "thumbs", queue = "images", memory = 512, env = {} },
  ]
}

job "workers" {
  dynamic "group" {
    for_each = var.workers
    labels   = [group.value.name]

    content {
      count = 1

      task "worker" {
        driver = "docker"
        config {
          image = "ghcr.io/example/worker:8"
          args  = ["--queue", group.value.queue]
        }

        resources {
          memory = group.value.memory
        }

        env {
          QUEUE = group.value.queue
        }

        dynamic "template" {
          for_each = group.value.env
          content {
            data        = "${template.key}=${template.value}"
            destination = "local/${template.key}.env"
            env         = true
          }
        }
      }
    }
  }
}
