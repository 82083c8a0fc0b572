# Run with: nomad job run -var-file=files/prod.vars.hcl -var 'replicas=7' variables-inputs.nomad.hcl
variable "tag" {
  type = string
}

variable "replicas" {
  type    = number
  default = 1
}

variable "datacenters" {
  type    = list(string)
  default = ["dc1"]
}

variable "log_level" {
  type    = string
  default = "info"
}

variable "features" {
  type    = list(string)
  default = []
}

job "checkout" {
  datacenters = var.datacenters

  group "checkout" {
    count = var.replicas

    task "checkout" {
      driver = "docker"
      config {
        image = "ghcr.io/example/checkout:${var.tag}"
      }
      env {
        LOG_LEVEL = var.log_level
        FEATURES  = join(",", var.features)
      }
    }
  }
}
