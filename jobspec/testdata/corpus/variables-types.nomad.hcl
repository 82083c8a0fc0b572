variable "image" {
  type        = string
  description = "Container image of the app."
  default     = "ghcr.io/example/app"
}

variable "tag" {
  type    = string
  default = "1.4.0"
}

variable "replicas" {
  type    = number
  default = 2
}

variable "canary" {
  type    = bool
  default = false
}

variable "datacenters" {
  type    = list(string)
  default = ["dc1", "dc2"]
}

variable "resources" {
  type = object({
    cpu    = number
    memory = number
  })
  default = {
    cpu    = 300
    memory = 512
  }
}

variable "labels" {
  type    = map(string)
  default = { team = "checkout", tier = "backend" }
}

job "app" {
  datacenters = var.datacenters
  meta        = var.labels

  group "app" {
    count = var.replicas

    update {
      canary       = var.canary ? 1 : 0
      auto_promote = var.canary
    }

    task "app" {
      driver = "docker"
      config {
        image = "${var.image}:${var.tag}"
      }
      resources {
        cpu    = var.resources.cpu
        memory = var.resources.memory
      }
    }
  }
}
