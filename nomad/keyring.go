package nomad

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// rootKeyBits is the size of the RSA signing keys: RS256 is what OIDC
// consumers of the JWKS (cloud identity federation, Vault) all accept.
const rootKeyBits = 2048

// keyringRetry is the pause between attempts to create the first key.
const keyringRetry = time.Second

// initializeKeyring makes sure the cluster has an active signing key: the
// leader creates one when none exists, retrying until it succeeds or ctx
// (leadership) ends.
func (s *Server) initializeKeyring(ctx context.Context) {
	for {
		active, err := s.State().ActiveRootKey(nil)
		if err == nil && active != nil {
			return
		}
		if err == nil {
			_, _, err = s.RotateRootKey(nil)
			if err == nil {
				s.logger.Info("created the cluster's first signing key")
				return
			}
		}
		s.logger.Warn("failed to initialize the keyring; retrying", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(keyringRetry):
		}
	}
}

// RotateRootKey creates a new active signing key (the previous active key
// becomes inactive but stays published) and returns it as stored, with the
// raft index it was written at. Call it on the leader.
func (s *Server) RotateRootKey(caller *acl.ACL) (*structs.RootKey, uint64, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return nil, 0, err
	}
	priv, err := rsa.GenerateKey(rand.Reader, rootKeyBits)
	if err != nil {
		return nil, 0, fmt.Errorf("keyring: generate key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, 0, fmt.Errorf("keyring: encode key: %w", err)
	}
	now := s.now().UnixNano()
	key := &structs.RootKey{
		KeyID:       generateUUID(),
		Algorithm:   structs.RootKeyAlgorithm,
		SigningKey:  der,
		State:       structs.RootKeyStateInactive,
		CreateTime:  now,
		PublishTime: now,
	}
	// Publish first, then activate: the key is in the JWKS (an inactive
	// key is published) before anything is signed with it, so verifiers
	// that fetched the JWKS in between never see an unknown "kid".
	createIndex, err := s.applyRootKey(key)
	if err != nil {
		return nil, 0, err
	}
	key.State = structs.RootKeyStateActive
	index, err := s.applyRootKey(key)
	if err != nil {
		return nil, 0, err
	}
	return &structs.RootKey{
		KeyID: key.KeyID, Algorithm: key.Algorithm, State: key.State,
		CreateTime: now, PublishTime: now, CreateIndex: createIndex, ModifyIndex: index,
	}, index, nil
}

// applyRootKey upserts key through raft and returns the index.
func (s *Server) applyRootKey(key *structs.RootKey) (uint64, error) {
	resp, index, err := s.raftApply(structs.KeyringUpsertRequestType, &structs.KeyringUpsertRequest{Key: key})
	if err == nil {
		err, _ = resp.(error)
	}
	return index, err
}

// DeleteRootKey removes key id and returns the index of the write. The
// active key cannot be removed (state.ErrActiveRootKey). Call it on the leader.
func (s *Server) DeleteRootKey(caller *acl.ACL, id string) (uint64, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return 0, err
	}
	key, err := s.rootKey(id)
	if err != nil {
		return 0, err
	}
	if key.State == structs.RootKeyStateActive {
		return 0, state.ErrActiveRootKey
	}
	// Variables encrypted with the key would become unreadable.
	if inUse, err := s.State().VariablesByKeyID(id); err != nil {
		return 0, err
	} else if inUse {
		return 0, structs.BadRequestf("root key in use, cannot delete")
	}
	resp, index, err := s.raftApply(structs.KeyringDeleteRequestType, &structs.KeyringDeleteRequest{KeyID: id})
	if err == nil {
		err, _ = resp.(error)
	}
	return index, err
}

// ErrRootKeyNotFound is returned for an unknown key ID.
var ErrRootKeyNotFound = errors.New("root key not found")

func (s *Server) rootKey(id string) (*structs.RootKey, error) {
	keys, err := s.State().RootKeys(nil)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if k.KeyID == id {
			return k, nil
		}
	}
	return nil, ErrRootKeyNotFound
}

// PublicKeySet converts root keys into the JSON Web Key Set served at
// /.well-known/jwks.json: one RS256 signature-verification key per root
// key, "kid" being the key ID. Keys whose material cannot be decoded are
// skipped (and reported in the error, with the set of the others).
func PublicKeySet(keys []*structs.RootKey) (jose.JSONWebKeySet, error) {
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{}}
	var errs []error
	for _, k := range keys {
		priv, err := x509.ParsePKCS8PrivateKey(k.SigningKey)
		if err != nil {
			errs = append(errs, fmt.Errorf("keyring: key %s: %w", k.KeyID, err))
			continue
		}
		rsaKey, ok := priv.(*rsa.PrivateKey)
		if !ok {
			errs = append(errs, fmt.Errorf("keyring: key %s is a %T, not RSA", k.KeyID, priv))
			continue
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{
			Key: &rsaKey.PublicKey, KeyID: k.KeyID, Algorithm: string(jose.RS256), Use: "sig",
		})
	}
	return set, errors.Join(errs...)
}
