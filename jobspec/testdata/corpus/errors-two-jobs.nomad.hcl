job "a" {
}

job "b" {
}
