job "grafana" {
  group "grafana" {
    count = 2

    volume "data" {
      type            = "csi"
      source          = "grafana-data"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
      per_alloc       = true

      mount_options {
        fs_type     = "ext4"
        mount_flags = ["noatime"]
      }
    }

    task "grafana" {
      driver = "docker"
      config {
        image = "grafana/grafana:11.2.0"
      }
      volume_mount {
        volume      = "data"
        destination = "/var/lib/grafana"
      }
    }
  }
}
