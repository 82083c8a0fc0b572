// Package imageresolve turns a Docker image tag into the digest it points at
// now, with one manifest HEAD against the registry, and pins the images of
// a job's Docker tasks (`name:tag` becomes `name:tag@sha256:…`).
//
// It is the server's only registry client: the job register and plan
// endpoints call PinJob before a job is validated and diffed, and the image
// watcher (nomad/imagewatcher) calls Resolver.Resolve once per distinct
// (reference, credential) per interval. Resolution never runs under raft
// apply; every call is bounded by Options.Timeout.
//
// Unavailable splits resolution errors: a registry that answered no
// digest because the tag does not exist (404), the credentials are wrong
// (401, 403) or the request is bad (other 4xx) refuses the registration;
// one that could not be reached, timed out, or answered 5xx, 429 or 408
// leaves the image unpinned (PinJob's Pinned.Unpinned, with a warning).
// With the servers' image_pinning = "off", PinJob resolves nothing.
//
// Credentials come from the task's `auth {}` block, else from a server-side
// Docker config.json (agent option `registry_auth_config`), else the request
// is anonymous. Registries on loopback addresses (127.0.0.0/8, ::1,
// localhost) and the ones listed in Options.Insecure are spoken to over
// plain HTTP; go-containerregistry also does so for RFC 1918 addresses.
//
// The package also parses the image settings Drover reads from a Docker
// task's `config {}` block: pin_digest, auto_update (true, false or
// "notify"), auto_update_interval, auto_update_soak, auto_update_min_age,
// auto_update_window (ParseWindows, window.go: the window syntax) and
// auto_update_approval (see Settings), and reads an image's config
// "created" time (Resolver.Created) for auto_update_min_age.
//
// Importers: package nomad (register, plan, watcher wiring),
// nomad/imagewatcher and the agent wiring (command/agent, for Options). It imports nomad/structs and go-containerregistry only.
package imageresolve
