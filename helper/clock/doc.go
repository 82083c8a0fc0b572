// Package clock is the source of time and timers for Drover's long-running
// loops (the eval broker, the deployment watcher). Their decision code takes
// `now` as a parameter; the loops that drive it read the time and arm
// timers through a Clock so tests can inject a fake one (or run the real one
// inside a testing/synctest bubble).
//
// It imports nothing of Drover's; anyone may import it.
package clock
