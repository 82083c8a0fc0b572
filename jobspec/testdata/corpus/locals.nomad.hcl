variable "env" {
  default = "prod"
}

locals {
  name      = "search-${var.env}"
  full_name = "${local.name}-${local.region}"
  region    = "eu-central-1"
  is_prod   = var.env == "prod"
  replicas  = local.is_prod ? 4 : 1
}

locals {
  common_tags = ["env:${var.env}", "region:${local.region}"]
}

job "search" {
  name = local.full_name

  group "search" {
    count = local.replicas

    service {
      name     = local.name
      tags     = local.common_tags
      provider = "nomad"
    }

    task "opensearch" {
      driver = "docker"
      config {
        image = "opensearchproject/opensearch:2.17.0"
      }
      # Keys with dots need the map form.
      env = {
        "cluster.name"   = local.full_name
        "discovery.type" = "single-node"
      }
    }
  }
}
