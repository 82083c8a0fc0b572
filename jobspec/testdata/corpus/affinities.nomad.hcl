job "cache" {
  affinity {
    attribute = "${node.datacenter}"
    value     = "us-east-1"
  }

  group "redis" {
    affinity {
      attribute = "${meta.rack}"
      value     = "r1"
      weight    = -50
    }

    affinity {
      attribute        = "${meta.disks}"
      set_contains_all = "ssd,nvme"
      weight           = 80
    }

    task "redis" {
      driver = "docker"
      config {
        image = "redis:7.4"
      }

      affinity {
        attribute = "${attr.kernel.version}"
        operator  = "version"
        value     = ">= 6.1"
        weight    = 25
      }

      affinity {
        attribute = "${node.class}"
        regexp    = "^mem-"
      }
    }
  }
}
