job "plugin-nfs-nodes" {
  type = "system"

  group "nodes" {
    task "plugin" {
      driver = "docker"

      config {
        image      = "registry.k8s.io/sig-storage/nfsplugin:v4.9.0"
        privileged = true
        args = [
          "--endpoint=unix://csi/csi.sock",
          "--nodeid=${attr.unique.hostname}",
        ]
      }

      csi_plugin {
        id             = "nfs"
        type           = "node"
        mount_dir      = "/csi"
        health_timeout = "1m"
      }

      resources {
        cpu    = 50
        memory = 64
      }
    }
  }
}
