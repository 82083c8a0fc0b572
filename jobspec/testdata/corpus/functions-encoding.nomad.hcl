locals {
  limits = yamldecode(file("files/limits.yaml"))
  users  = csvdecode("name,uid\nalice,1001\nbob,1002\n")
}

job "encoding" {
  group "g" {
    task "t" {
      driver = "docker"
      config {
        image = "busybox:1.36"
        args  = local.limits.labels
      }

      resources {
        cpu    = local.limits.cpu
        memory = local.limits.memory
      }

      meta {
        base64encode = base64encode("nomad:secret")
        base64decode = base64decode("aGVsbG8gd29ybGQ=")
        csv_second   = local.users[1].name
        csv_uid      = local.users[0].uid
        jsondecode   = jsondecode("{\"port\": 8080}").port
        jsonencode   = jsonencode({ b = [1, 2], a = "x" })
        urlencode    = urlencode("a b&c=d/é")
        yamlencode   = yamlencode({ name = "web", ports = [80, 443] })
      }
    }
  }
}
