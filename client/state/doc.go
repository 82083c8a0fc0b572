// Package state is the client agent's local state database: a bbolt file at
// <data_dir>/client/state.db that lets a restarted client keep its node
// identity and reattach to the tasks it left running.
//
// Layout (bucket → key → JSON value):
//
//	node                       "identity"       NodeIdentity{ID, SecretID}
//	allocs / <allocID>         "alloc"          the structs.Allocation the client runs
//	                           "handle/<task>"  drivers.TaskHandle
//	                           "state/<task>"   structs.TaskState
//	                           "health"         health.Record (deployment health)
//	                           "images"         AllocImages (image GC: the images it leases)
//	images                     <imageID>        KnownImage (image GC: an image the client leased)
//
// DB implements the alloc runner's StateDB interface (task handles and task
// states, DeleteAlloc) and its HealthDB interface, and adds the node
// identity and the allocations themselves, so that the client can recreate
// its alloc runners offline, and what the image collector (client/imagegc)
// must remember across restarts: the images each allocation leases and the
// images the client leased at some point (with when they lost their last
// lease).
// Every method is one bbolt transaction and safe for concurrent use; values
// are JSON so the file stays readable with any bbolt tool.
//
// Importers: the client agent (package client) only; alloc runners see it
// through their own StateDB interface. It imports bbolt, drivers,
// nomad/structs and client/allocrunner/health (the record type).
package state
