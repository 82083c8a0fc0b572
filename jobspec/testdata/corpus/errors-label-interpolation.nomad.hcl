variable "env" {
  default = "dev"
}

job "api-${var.env}" {
}
