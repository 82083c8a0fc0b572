job "uuid-time" {
  group "g" {
    task "t" {
      driver = "docker"
      config {
        image = "busybox:1.36"
      }
      meta {
        # A random UUID differs on every parse: check its shape.
        uuidv4_len  = length(uuidv4())
        uuidv4_ver  = substr(uuidv4(), 14, 1)
        uuidv5_dns  = uuidv5("dns", "www.example.com")
        uuidv5_url  = uuidv5("url", "https://example.com/")
        formatdate  = formatdate("YYYY-MM-DD hh:mm", "2024-03-01T14:05:00Z")
        timeadd     = timeadd("2024-03-01T14:05:00Z", "36h")
      }
    }
  }
}
