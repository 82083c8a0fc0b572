# NOMAD_VAR_release=2024.11.3 nomad job run env-vars-only.nomad.hcl
variable "release" {
  type = string
}

variable "debug" {
  type    = bool
  default = false
}

job "release-notes" {
  type = "batch"
  meta {
    release = var.release
    debug   = var.debug
  }

  group "g" {
    task "publish" {
      driver = "exec"
      config {
        command = "/usr/local/bin/publish"
        args    = ["--release", var.release]
      }
    }
  }
}
