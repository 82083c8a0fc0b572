// Package search answers /v1/search (ID and name prefixes) and
// /v1/search/fuzzy (case-insensitive substrings of names, images and
// commands) over a state snapshot, with Nomad's contexts and limits.
//
// Who may import it: the HTTP layer (command/agent). It imports
// nomad/state and nomad/structs.
package search
