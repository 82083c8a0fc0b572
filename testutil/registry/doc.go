// Package registry is a test fixture: an in-process OCI/Docker registry
// (go-containerregistry's pkg/registry handler, blobs in memory) listening on
// 127.0.0.1:<free port>, wrapped with knobs that tests and benchmarks of
// "prefetch before kill" and image auto-update need:
//
//   - bandwidth limit for blob downloads (SetBandwidth), shared by all
//     concurrent downloads like a single uplink, and a limit for each
//     download on its own (SetDownloadBandwidth), like clients that each
//     sit behind their own link;
//   - failure injection: FailBlobs (blob GETs answer 500), FailManifests
//     (manifest GET/HEAD answer 500) and Stall (blob GETs, including ones
//     already streaming, hang without sending bytes until released or the
//     request ends);
//   - counters: BlobPulls, ManifestGets, ManifestHeads, TotalBlobBytes.
//
// The local Docker engine pulls from it over plain HTTP: dockerd treats
// 127.0.0.0/8 registries as insecure by default, and the engine shares the
// test process's loopback. Typical use:
//
//	reg := registry.Start(t, registry.Options{})
//	ref := reg.Ref("web", "v1") // "127.0.0.1:PORT/web:v1"
//	digest, err := images.Push(img, ref)
//	reg.SetBandwidth(1 << 20) // 1 MiB/s from now on
//
// Start ties the registry to a test (closed in t.Cleanup); New and Close
// serve commands such as benchmarks. Importers: tests and test commands only;
// never production code. It imports go-containerregistry and the standard
// library.
package registry
