variable "nodes" {
  default = 5
}

job "numeric" {
  group "g" {
    count = max(1, floor(var.nodes / 2))

    task "t" {
      driver = "docker"
      config {
        image = "busybox:1.36"
      }
      resources {
        cpu    = ceil(var.nodes * 100 / 3)
        memory = pow(2, 9)
      }
      meta {
        abs      = abs(-12.5)
        ceil     = ceil(4.1)
        floor    = floor(4.9)
        log      = log(1024, 2)
        max      = max(3, 12, 9)
        min      = min(3, 12, 9)
        parseint = parseint("ff", 16)
        pow      = pow(3, 3)
        signum   = signum(-42)
        modulo   = 17 % 5
      }
    }
  }
}
