job "db-cluster" {
  # No operator: "=" is meant.
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  constraint {
    attribute = "${attr.nomad.version}"
    version   = ">= 1.7.0"
  }

  constraint {
    attribute = "${attr.nomad.version}"
    semver    = ">= 1.8.0-beta.1"
  }

  constraint {
    distinct_hosts = true
  }

  group "db" {
    count = 3

    # Turned off for now; kept to flip back on.
    constraint {
      distinct_hosts = false
    }

    constraint {
      distinct_property = "${meta.rack}"
      value             = "1"
    }

    constraint {
      attribute = "${node.class}"
      regexp    = "^(db|storage)-"
    }

    constraint {
      attribute    = "${meta.features}"
      set_contains = "nvme"
    }

    constraint {
      attribute = "${meta.zone}"
      operator  = "set_contains_any"
      value     = "a,b"
    }

    constraint {
      attribute = "${attr.unique.platform.aws.instance-id}"
      operator  = "is_set"
    }

    constraint {
      attribute = "${meta.maintenance}"
      operator  = "is_not_set"
    }

    constraint {
      attribute = "${attr.cpu.numcores}"
      operator  = ">="
      value     = "8"
    }

    task "db" {
      driver = "docker"
      config {
        image = "cockroachdb/cockroach:v24.2.0"
      }

      constraint {
        attribute = "${attr.cpu.arch}"
        operator  = "!="
        value     = "arm64"
      }

      constraint {
        attribute = "${attr.driver.docker.version}"
        value     = "27.3.1"
      }
    }
  }
}
