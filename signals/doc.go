// Package signals names the POSIX signals Drover sends to tasks: Parse
// reads a jobspec's kill_signal or change_signal ("SIGHUP", "hup", "1"),
// Name gives a signal's conventional name. nomad/structs checks signal
// names at registration with it and drivers send what it parses, so a
// name is refused exactly when no driver could send it.
//
// Importers: nomad/structs and drivers (and through them anyone). It
// imports the standard library only.
package signals
