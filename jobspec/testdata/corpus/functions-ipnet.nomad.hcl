variable "vpc_cidr" {
  default = "10.20.0.0/16"
}

job "ipnet" {
  group "g" {
    network {
      mode = "bridge"
      dns {
        servers = [cidrhost(var.vpc_cidr, 2)]
      }
    }

    task "t" {
      driver = "docker"
      config {
        image = "busybox:1.36"
      }
      meta {
        cidrhost      = cidrhost("10.20.4.0/24", 10)
        cidrhost_neg  = cidrhost("10.20.4.0/24", -2)
        cidrnetmask   = cidrnetmask("172.16.0.0/12")
        cidrsubnet    = cidrsubnet(var.vpc_cidr, 8, 3)
        cidrsubnet_v6 = cidrsubnet("fd00:fd12:3456:7890::/56", 16, 162)
        cidrsubnets   = join(" ", cidrsubnets("10.1.0.0/16", 4, 4, 8, 4))
      }
    }
  }
}
