# Paths are relative to the directory `nomad job run` is started in.
job "files" {
  group "g" {
    task "t" {
      driver = "docker"
      config {
        image = "nginx:1.27"
      }

      template {
        data        = file("files/app.conf.tpl")
        destination = "local/app.conf"
      }

      # fileescaped returns the file with ${ and %{ escaped as $${ and %%{;
      # a function result is not parsed again, so the escaped text is what
      # the template (and the rendered file) holds.
      template {
        data        = <<-EOT
          ${fileescaped("files/start.sh")}
        EOT
        destination = "local/start.sh"
        perms       = "0755"
      }

      meta {
        motd        = trimspace(file("files/motd.txt"))
        admin_b64   = filebase64("files/admin.env")
        exists      = fileexists("files/motd.txt")
        missing     = fileexists("files/nope.txt")
        confs       = join(",", sort(fileset("files/conf.d", "*.conf")))
        basename    = basename("/etc/nginx/conf.d/default.conf")
        dirname     = dirname("/etc/nginx/conf.d/default.conf")
        abspath_abs = substr(abspath("files/motd.txt"), 0, 1) == "/"
        abspath_end = basename(abspath("files/motd.txt"))
        pathexpand  = pathexpand("/srv/data")
        home_expand = pathexpand("~/data") != "~/data"
      }
    }
  }
}
