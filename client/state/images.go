package state

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

var (
	bucketImages   = []byte("images")
	keyAllocImages = []byte("images")
)

// KnownImage is an image the client leased at some point (see
// client/imagegc.KnownImage).
type KnownImage struct {
	FirstUnleasedAt time.Time `json:",omitzero"`
	RetryAt         time.Time `json:",omitzero"`
}

// KnownImages returns the stored known images by image ID (empty when
// none).
func (db *DB) KnownImages() (map[string]KnownImage, error) {
	out := map[string]KnownImage{}
	err := db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketImages).ForEach(func(k, v []byte) error {
			var ki KnownImage
			if err := json.Unmarshal(v, &ki); err != nil {
				return fmt.Errorf("decoding %s: %w", k, err)
			}
			out[string(k)] = ki
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("state: reading known images: %w", err)
	}
	return out, nil
}

// PutKnownImages replaces the stored known images with known.
func (db *DB) PutKnownImages(known map[string]KnownImage) error {
	err := db.update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketImages); err != nil {
			return err
		}
		b, err := tx.CreateBucket(bucketImages)
		if err != nil {
			return err
		}
		for id, ki := range known {
			if id == "" {
				continue
			}
			raw, err := json.Marshal(ki)
			if err != nil {
				return err
			}
			if err := b.Put([]byte(id), raw); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("state: writing known images: %w", err)
	}
	return nil
}

// AllocImages is what the image collector remembers of one allocation, so
// that its successors (and a restarted client) can keep the images of
// previous versions leased after the tasks' handles are gone.
type AllocImages struct {
	// Tasks is the image ID of each Docker task, by task name.
	Tasks map[string]string `json:",omitempty"`
	// Chain are the image IDs of the previous versions the allocation
	// leases for a revert of its deployment.
	Chain []string `json:",omitempty"`
	// Healthy is set once the allocation was healthy in a deployment.
	Healthy bool `json:",omitempty"`
}

// PutAllocImages stores the image record of allocID. It does nothing when
// the allocation's bucket does not exist (the allocation was deleted).
func (db *DB) PutAllocImages(allocID string, r *AllocImages) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("state: encoding images of %s: %w", allocID, err)
	}
	err = db.update(func(tx *bolt.Tx) error {
		b, err := allocBucket(tx, allocID, false)
		if err != nil || b == nil {
			return err
		}
		return b.Put(keyAllocImages, raw)
	})
	if err != nil {
		return fmt.Errorf("state: writing images of %s: %w", allocID, err)
	}
	return nil
}

// AllocImages returns the image record of allocID, or nil.
func (db *DB) AllocImages(allocID string) (*AllocImages, error) {
	r := new(AllocImages)
	found, err := db.getAllocKey(allocID, keyAllocImages, r, "images of "+allocID)
	if err != nil || !found {
		return nil, err
	}
	return r, nil
}
