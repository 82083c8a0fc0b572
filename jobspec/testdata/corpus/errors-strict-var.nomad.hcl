variable "tag" {
  default = "1"
}

job "strict" {
  meta {
    tag = var.tag
  }
}
