job "typo" {
  group "g" {
    taks "t" {
      driver = "docker"
    }
  }
}
