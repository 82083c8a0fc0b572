variable "ports" {
  default = "80,443"
}

job "conversion" {
  group "g" {
    task "t" {
      driver = "docker"
      config {
        image = "busybox:1.36"
        ports = convert(split(",", var.ports), list(string))
      }
      meta {
        can_ok     = can(tonumber("12"))
        can_fail   = can(tonumber("twelve"))
        try        = try(tonumber("n/a"), 0)
        try_lookup = try({ a = "x" }.b, "default")
        tobool     = tobool("true")
        tonumber   = tonumber("42") + 1
        tostring   = tostring(3.5)
        tolist     = length(tolist(["a", "b"]))
        toset      = length(toset(["a", "a", "b"]))
        tomap      = jsonencode(tomap({ x = "1" }))
        convert    = jsonencode(convert({ a = 1 }, map(string)))
      }
    }
  }
}
