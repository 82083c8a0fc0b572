module github.com/hashicorp/go-immutable-radix

go 1.22
