// Package e2e holds Drover's end-to-end tests: real agents started as
// separate processes of the drover binary on loopback, driven through the
// nomad/api client. TestMain builds the binary once.
package e2e
