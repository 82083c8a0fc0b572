variable "tag" {
  type = string
}

job "needs-tag" {
  group "g" {
    task "t" {
      driver = "docker"
      config {
        image = "app:${var.tag}"
      }
    }
  }
}
