module github.com/hashicorp/go-immutable-radix

go 1.12

require github.com/hashicorp/golang-lru v0.5.0
