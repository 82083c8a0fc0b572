variable "environment" {
  type    = string
  default = "qa"

  validation {
    condition     = contains(["staging", "production"], var.environment)
    error_message = "The environment must be staging or production."
  }
}

job "inventory" {
  group "inventory" {
    task "inventory" {
      driver = "docker"
      meta {
        env = var.environment
      }
      config {
        image = "ghcr.io/example/inventory:3"
      }
    }
  }
}
