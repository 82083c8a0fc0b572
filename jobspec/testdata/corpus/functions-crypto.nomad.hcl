locals {
  password = "correct horse battery staple"
}

job "crypto" {
  group "g" {
    task "t" {
      driver = "docker"
      config {
        image = "busybox:1.36"
      }

      meta {
        md5    = md5("hello")
        sha1   = sha1("hello")
        sha256 = sha256("hello")
        sha512 = sha512("hello")
        # bcrypt salts randomly: check the shape and the cost instead of the value.
        bcrypt_prefix = substr(bcrypt(local.password, 6), 0, 7)
        bcrypt_length = length(bcrypt(local.password))
        rsadecrypt    = rsadecrypt(file("files/secret.b64"), file("files/test-only-rsa-key.pem"))
      }
    }
  }
}
