package scheduler

import (
	"crypto/rand"
	"encoding/hex"
)

// idBatch is how many IDs' worth of randomness newIDSource reads at once.
const idBatch = 256

// newIDSource returns a generator of random (version 4) UUID strings, the
// format of uuid.NewString. It reads the system's randomness idBatch IDs
// at a time instead of once per ID: a system job places one allocation per
// node. The generator is not safe for concurrent use; each scheduler owns
// its own.
func newIDSource() func() string {
	var buf [16 * idBatch]byte
	next := len(buf)
	return func() string {
		if next == len(buf) {
			if _, err := rand.Read(buf[:]); err != nil {
				panic("scheduler: read random bytes: " + err.Error()) // crypto/rand never fails on supported systems
			}
			next = 0
		}
		u := buf[next : next+16]
		next += 16
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
		var s [36]byte
		hex.Encode(s[0:8], u[0:4])
		s[8] = '-'
		hex.Encode(s[9:13], u[4:6])
		s[13] = '-'
		hex.Encode(s[14:18], u[6:8])
		s[18] = '-'
		hex.Encode(s[19:23], u[8:10])
		s[23] = '-'
		hex.Encode(s[24:], u[10:16])
		return string(s[:])
	}
}
