# nomad job run -var-file=files/overrides.json variables-json-null.nomad.hcl
variable "image_id" {
  type = string
}

variable "labels" {
  type    = list(string)
  default = []
}

# Optional: null unless set.
variable "node_pool" {
  type    = string
  default = null
}

job "static-site" {
  node_pool = var.node_pool

  group "site" {
    task "nginx" {
      driver = "docker"
      config {
        image = var.image_id
      }
      meta {
        labels    = join(",", var.labels)
        pool_set  = var.node_pool != null
      }
    }
  }
}
