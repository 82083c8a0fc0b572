// Package search answers /v1/search (ID and name prefixes) and
// /v1/search/fuzzy (case-insensitive substrings of names, images and
// commands) over a state snapshot, with Nomad's contexts and limits.
//
// Who may import it: the server (nomad, which runs the searches) and the
// HTTP layer (command/agent, for ValidContext and MinFuzzyLength). It
// imports nomad/state and nomad/structs.
package search
