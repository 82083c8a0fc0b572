// Package agentproc starts drover agents as real processes for tests: it
// builds the binary, hands out free ports on a chosen loopback address,
// writes an agent's configuration and starts, signals and kills it.
//
// Only test packages under e2e/ may import it (package e2e and e2e/chaos);
// nothing of Drover itself depends on it.
package agentproc
