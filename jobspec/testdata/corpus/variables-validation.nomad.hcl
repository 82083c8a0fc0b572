variable "environment" {
  type    = string
  default = "staging"

  validation {
    condition     = contains(["staging", "production"], var.environment)
    error_message = "The environment must be staging or production."
  }
}

variable "memory" {
  type    = number
  default = 256

  validation {
    condition     = var.memory >= 128 && var.memory <= 4096
    error_message = "Memory must be between 128 and 4096 MB."
  }
}

job "inventory" {
  name = "inventory-${var.environment}"

  group "inventory" {
    task "inventory" {
      driver = "docker"
      config {
        image = "ghcr.io/example/inventory:3"
      }
      resources {
        memory = var.memory
      }
    }
  }
}
