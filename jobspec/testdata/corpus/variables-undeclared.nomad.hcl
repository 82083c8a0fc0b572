job "typo" {
  group "g" {
    task "t" {
      driver = "docker"
      config {
        image = var.imgae
      }
    }
  }
}
