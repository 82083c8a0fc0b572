locals {
  raw_name = "  Billing-API \n"
  version  = "v2.13.4-rc1"
}

job "strings" {
  meta {
    chomp        = chomp("line\n\n")
    format       = format("%s-%03d", "worker", 7)
    formatlist   = join(",", formatlist("%s.internal", ["a", "b"]))
    indent       = indent(2, "a\nb")
    join         = join("-", ["x", "y", "z"])
    lower        = lower("MiXeD")
    upper        = upper("loud")
    regex        = regex("v([0-9]+)\\.", local.version)[0]
    regexall     = length(regexall("[0-9]+", local.version))
    regex_replace = regex_replace(local.version, "-rc[0-9]+$", "")
    regexreplace  = regexreplace("a1b22", "[0-9]+", "#")
    replace      = replace("a.b.c", ".", "/")
    replace_plain = replace("web-01-eu", "/[0-9]+/", "NN") # no regex: only regex_replace has them
    split        = split(".", "10.0.0.1")[3]
    strlen       = strlen("héllo")
    strrev       = strrev("stressed")
    substr       = substr("abcdefgh", 2, 3)
    title        = title("hello nomad world")
    trim         = trim("--name--", "-")
    trimprefix   = trimprefix("refs/heads/main", "refs/heads/")
    trimsuffix   = trimsuffix("app.nomad.hcl", ".nomad.hcl")
    trimspace    = trimspace(local.raw_name)
  }

  group "g" {
    task "t" {
      driver = "docker"
      config {
        image = "busybox:1.36"
      }
    }
  }
}
