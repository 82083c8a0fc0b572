locals {
  order = ["first", "second", "third"]
}

job "reverse" {
  datacenters = reverse(["dc-b", "dc-a"])

  group "g" {
    task "t" {
      driver = "docker"
      config {
        image = "busybox:1.36"
        args  = reverse(local.order)
      }
      meta {
        string = reverse("nomad")
        strrev = strrev("drover")
        joined = join(".", reverse(split(".", "www.example.com")))
      }
    }
  }
}
