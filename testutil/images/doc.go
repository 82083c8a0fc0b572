// Package images builds small, real container images for tests and
// benchmarks of the Docker driver, prefetch-before-kill and image
// auto-update, and pushes them to a registry (see testutil/registry).
//
// Build returns a linux/GOARCH image with:
//
//   - a layer holding /server, a static Go binary built once per process
//     from webserver/main.go (embedded in this package, so the build works
//     from any working directory and needs only the go tool on PATH or in
//     GOROOT). It serves GET / with "version <V>\n" and GET /health with 200
//     on $PORT, and exits promptly on SIGTERM;
//   - optionally a layer of PaddingBytes incompressible random bytes
//     (/padding), derived from Seed, to make pulls take time;
//   - config: Entrypoint ["/server"], Env ["VERSION=<V>", "PORT=8080"],
//     ExposedPorts 8080/tcp, label drover.test=1, fixed timestamps.
//
// Builds are deterministic: the same options give the same digest. The
// server layer is the same in every image; the padding layer depends only on
// PaddingBytes and Seed (Seed 0 derives one from Version, so that a new
// version brings new bytes to download). Two versions with the same nonzero
// Seed share the padding layer, so a node that has one pulls only the
// config of the other.
//
//	img, err := images.Build(images.BuildOptions{Version: "1", PaddingBytes: 8 << 20})
//	digest, err := images.Push(img, reg.Ref("web", "v1"))
//
// Importers: tests and test commands only. It imports go-containerregistry
// and the standard library, and runs "go build".
package images
