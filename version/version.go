package version

// Version is Drover's release version. Nodes report it as attr.drover.version.
const Version = "0.1.0"

// NomadAPIVersion is the Nomad release whose HTTP API and jobspec Drover
// implements (the official CLI of this version drives Drover unchanged).
// Nodes report it as attr.nomad.version, so job files that constrain on the
// Nomad version (native service discovery, workload identity) place as they
// would on that Nomad release.
const NomadAPIVersion = "2.0.5"
