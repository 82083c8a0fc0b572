job "secret-consumer" {
  group "g" {
    task "app" {
      driver = "docker"
      config {
        image = "ghcr.io/example/app:3"
      }

      secret "db" {
        provider = "nomad"
        path     = "nomad/jobs/secret-consumer/db"
      }

      secret "api" {
        provider = "vault"
        path     = "secret/data/api"
        config {
          engine = "kv_v2"
        }
        env {
          API_REGION = "eu"
        }
      }
    }
  }
}
