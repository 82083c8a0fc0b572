package scheduler

import (
	"crypto/rand"
	"encoding/hex"
)

// idBatch is how many IDs' worth of randomness newIDSource reads at once.
const idBatch = 256

// newIDSource returns a generator of random (version 4) UUID strings, the
// format of uuid.NewString. It reads the system's randomness idBatch IDs
// at a time instead of once per ID, and formats them into one string that
// it hands out in pieces: a system job places one allocation per node. An
// ID keeps its batch's string (9 KB) alive; IDs of plans reach state
// through the raft log, as copies. The generator is not safe for
// concurrent use; each scheduler owns its own.
func newIDSource() func() string {
	var raw [16 * idBatch]byte
	var ids string
	next := idBatch
	return func() string {
		if next == idBatch {
			if _, err := rand.Read(raw[:]); err != nil {
				panic("scheduler: read random bytes: " + err.Error()) // crypto/rand never fails on supported systems
			}
			buf := make([]byte, 36*idBatch)
			for i := 0; i < idBatch; i++ {
				formatUUID(buf[36*i:36*i+36], raw[16*i:16*i+16])
			}
			ids, next = string(buf), 0
		}
		id := ids[36*next : 36*next+36]
		next++
		return id
	}
}

// formatUUID writes the 16 random bytes u into s (36 bytes) as a version 4
// UUID.
func formatUUID(s, u []byte) {
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:16])
}
