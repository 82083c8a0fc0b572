job "minecraft" {
  group "server" {
    ephemeral_disk {
      size    = 2048
      sticky  = true
      migrate = true
    }

    task "server" {
      driver = "java"

      artifact {
        source      = "https://piston-data.mojang.com/v1/objects/abc123/server.jar"
        destination = "local/server"
        options {
          checksum = "sha1:abc123"
        }
      }

      artifact {
        source      = "git::https://github.com/example/mc-config"
        destination = "local/config"
        headers {
          X-Token = "not-a-secret"
        }
      }

      artifact {
        source = "s3::https://s3.amazonaws.com/mc-backups/world.tar.gz"
        chown  = true
      }

      config {
        jar_path    = "local/server/server.jar"
        jvm_options = ["-Xms1g", "-Xmx2g"]
        args        = ["nogui"]
      }

      resources {
        cpu    = 3000
        memory = 2560
      }
    }
  }
}
