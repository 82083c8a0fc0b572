job "tokens" {
  group "g" {
    task "client" {
      driver = "docker"
      config {
        image = "ghcr.io/example/client:1"
      }

      identity {
        env  = true
        file = true
      }

      identity {
        name        = "aws"
        aud         = ["sts.amazonaws.com"]
        file        = true
        ttl         = "1h"
        change_mode = "signal"
        change_signal = "SIGHUP"
      }

      identity {
        name = "vault_default"
        aud  = ["vault.io"]
        ttl  = "30m"
      }
    }
  }
}
