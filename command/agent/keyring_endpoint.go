package agent

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/nomad/structs"
)

// rootKeyMeta is the api view of a root key: never its key material.
func rootKeyMeta(k *structs.RootKey) *api.RootKeyMeta {
	return &api.RootKeyMeta{
		KeyID: k.KeyID, Algorithm: api.EncryptionAlgorithm(k.Algorithm),
		CreateTime: k.CreateTime, PublishTime: k.PublishTime,
		CreateIndex: k.CreateIndex, ModifyIndex: k.ModifyIndex,
		State: api.RootKeyState(k.State),
	}
}

// keyringList serves GET /v1/operator/keyring/keys (blocking).
func (h *HTTPServer) keyringList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	keys, meta, err := h.srv.KeyringList(r.Context(), opts)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	out := make([]*api.RootKeyMeta, 0, len(keys))
	for _, k := range keys {
		out = append(out, rootKeyMeta(k))
	}
	return out, metaIndex(meta), nil
}

// keyringRotate serves PUT /v1/operator/keyring/rotate: a new active key.
// Only the aes256-gcm algorithm exists; pre-publishing (publish_time) is
// not supported and refused rather than ignored.
func (h *HTTPServer) keyringRotate(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	q := r.URL.Query()
	if algo := q.Get("algo"); algo != "" && algo != structs.RootKeyAlgorithm {
		return nil, 0, badRequest("Invalid key algorithm %q: only %q is supported", algo, structs.RootKeyAlgorithm)
	}
	if _, err := boolParam(r, "full", false); err != nil {
		return nil, 0, err
	}
	if v := q.Get("publish_time"); v != "" {
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return nil, 0, badRequest("Invalid publish_time %q: must be unix nanoseconds", v)
		}
		return nil, 0, badRequest("publish_time: pre-publishing a key is not supported by Drover")
	}
	key, index, err := h.srv.RotateRootKey(aclOf(r))
	if err != nil {
		return nil, 0, err
	}
	return struct{ Key *api.RootKeyMeta }{Key: rootKeyMeta(key)}, index, nil
}

// keyringDelete serves DELETE /v1/operator/keyring/key/{id}. Drover signs
// no stored data with old keys, so force changes nothing.
func (h *HTTPServer) keyringDelete(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	if _, err := boolParam(r, "force", false); err != nil {
		return nil, 0, err
	}
	index, err := h.srv.DeleteRootKey(aclOf(r), r.PathValue("id"))
	switch {
	case errors.Is(err, nomad.ErrRootKeyNotFound):
		return nil, 0, notFound("root key not found")
	case errors.Is(err, nomad.ErrActiveRootKey):
		return nil, 0, badRequest("%v", err)
	case err != nil:
		return nil, 0, err
	}
	return struct{}{}, index, nil
}

// jwks serves /.well-known/jwks.json: the public halves of every root key.
func (h *HTTPServer) jwks(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	set, index, unpublished, err := h.srv.PublicKeys()
	if err != nil {
		return nil, 0, err
	}
	if unpublished != nil {
		h.logger.Error("some root keys are not published", "error", unpublished)
	}
	w.Header().Set("Cache-Control", "max-age=3600")
	return set, index, nil
}

// openIDConfiguration serves /.well-known/openid-configuration, the OIDC
// discovery document pointing at the JWKS.
func (h *HTTPServer) openIDConfiguration(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	issuer := h.agent.tls.scheme() + "://" + h.agent.config.AdvertiseHTTPAddr()
	return map[string]any{
		"issuer":                                issuer,
		"jwks_uri":                              issuer + "/.well-known/jwks.json",
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
	}, 0, nil
}
