package imageresolve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/drover-project/drover/helper/dockerauth"
)

// DefaultTimeout bounds one resolution when Options.Timeout is zero.
const DefaultTimeout = 15 * time.Second

// Options configure a Resolver. The zero value resolves anonymously with
// DefaultTimeout.
type Options struct {
	// DockerConfig is the path of a Docker config.json whose "auths" give
	// credentials for tasks without an auth block. Credential helpers are
	// not run. "" means none.
	DockerConfig string
	// Insecure lists registries ("host" or "host:port") spoken to over plain
	// HTTP, beyond the loopback ones.
	Insecure []string
	// Timeout bounds one resolution (all its requests).
	Timeout time.Duration
	// Transport replaces http.DefaultTransport (tests).
	Transport http.RoundTripper
}

// Auth is a task's auth block.
type Auth struct {
	Username      string
	Password      string
	IdentityToken string
	ServerAddress string
}

// Key identifies the credential without revealing it: "" for none, else a
// short hash. Checks are deduplicated per (reference, Key).
func (a *Auth) Key() string {
	if a == nil || (a.Username == "" && a.Password == "" && a.IdentityToken == "") {
		return ""
	}
	h := sha256.Sum256([]byte(a.Username + "\x00" + a.Password + "\x00" + a.IdentityToken))
	return hex.EncodeToString(h[:8])
}

// Resolver resolves tags to digests. It is safe for concurrent use.
type Resolver struct {
	opts Options
}

// New returns a Resolver.
func New(opts Options) *Resolver {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Transport == nil {
		opts.Transport = http.DefaultTransport
	}
	return &Resolver{opts: opts}
}

// RegistryError is a registry's answer that is not a digest.
type RegistryError struct {
	// StatusCode is the HTTP status, 0 when the registry was not reached.
	StatusCode int
	// RetryAfter is the registry's Retry-After on a 429 or 503, else 0.
	RetryAfter time.Duration
	Err        error
	// local marks errors found before any request (an invalid reference,
	// unreadable server credentials): they are not the registry's fault.
	local bool
}

func (e *RegistryError) Error() string { return e.Err.Error() }
func (e *RegistryError) Unwrap() error { return e.Err }

// Unavailable reports whether err (from Resolve) means that the registry
// gave no answer now: it could not be reached (connection refused, no
// route, DNS, TLS), timed out, or answered 5xx, 429 or 408. Registrations
// then store the tag unpinned. Every other error is an answer that
// refuses the image: 404 (no such tag), 401 and 403 (credentials), any
// other 4xx, an invalid reference, unreadable server credentials.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var re *RegistryError
	if !errors.As(err, &re) {
		var ne net.Error
		return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne)
	}
	switch {
	case re.local:
		return false
	case re.StatusCode == 0:
		return true // no HTTP answer: the transport failed
	case re.StatusCode == http.StatusTooManyRequests, re.StatusCode == http.StatusRequestTimeout, re.StatusCode >= 500:
		return true
	}
	return false
}

// Resolve returns the digest ("sha256:…") that ref's tag points at now, with
// one manifest HEAD (after the registry's auth handshake). auth, when it
// names a user or token, is used; else the server's Docker config, else
// anonymous. Errors are *RegistryError.
func (r *Resolver) Resolve(ctx context.Context, ref Ref, auth *Auth) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	var nopts []name.Option
	if r.insecure(ref.Registry) {
		nopts = append(nopts, name.Insecure)
	}
	tag, err := name.NewTag(ref.TagRef(), nopts...)
	if err != nil {
		return "", &RegistryError{Err: fmt.Errorf("invalid image reference %q: %w", ref.TagRef(), err), local: true}
	}
	authn, err := r.authenticator(ref.Registry, auth)
	if err != nil {
		return "", &RegistryError{Err: err, local: true}
	}
	rec := &retryAfterRecorder{next: r.opts.Transport}
	desc, err := remote.Head(tag,
		remote.WithContext(ctx),
		remote.WithAuth(authn),
		remote.WithTransport(rec),
		remote.WithRetryBackoff(remote.Backoff{Steps: 1}),
		remote.WithRetryPredicate(func(error) bool { return false }),
		remote.WithUserAgent("drover-imageresolve"),
	)
	if err != nil {
		re := &RegistryError{Err: err, RetryAfter: rec.retryAfter}
		var te *transport.Error
		if errors.As(err, &te) {
			re.StatusCode = te.StatusCode
		}
		return "", re
	}
	return desc.Digest.String(), nil
}

// insecure reports whether host is spoken to over plain HTTP.
func (r *Resolver) insecure(host string) bool {
	for _, h := range r.opts.Insecure {
		if strings.EqualFold(h, host) {
			return true
		}
	}
	hn := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		hn = h
	}
	if hn == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(hn, "[]"))
	return ip != nil && ip.IsLoopback()
}

// authenticator picks the task's credentials, else the server config's.
func (r *Resolver) authenticator(host string, a *Auth) (authn.Authenticator, error) {
	if a.Key() != "" {
		return authn.FromConfig(authn.AuthConfig{Username: a.Username, Password: a.Password, IdentityToken: a.IdentityToken}), nil
	}
	if r.opts.DockerConfig == "" {
		return authn.Anonymous, nil
	}
	ac, found, err := lookupConfigAuth(r.opts.DockerConfig, host)
	if err != nil {
		return nil, err
	}
	if !found {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(ac), nil
}

// lookupConfigAuth finds host's credentials in a docker config.json.
func lookupConfigAuth(path, host string) (authn.AuthConfig, bool, error) {
	c, found, err := dockerauth.Lookup(path, host)
	if err != nil {
		return authn.AuthConfig{}, false, fmt.Errorf("reading registry credentials: %w", err)
	}
	return authn.AuthConfig{Username: c.Username, Password: c.Password, IdentityToken: c.IdentityToken}, found, nil
}

// retryAfterRecorder remembers the Retry-After of a 429 or 503 answer.
type retryAfterRecorder struct {
	next       http.RoundTripper
	retryAfter time.Duration
}

func (t *retryAfterRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		t.retryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return resp, err
}

// ParseRetryAfter reads a Retry-After value: seconds or an HTTP date
// (relative to now). Unparsable or past values give 0.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return max(time.Duration(s)*time.Second, 0)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// Created returns the "created" time of the image config of ref's image at
// digest (auto_update_min_age): a manifest GET (for an index, the
// linux/GOARCH image's manifest too) and the config blob GET. A config
// without a created time gives the zero time and no error. Errors are
// *RegistryError.
func (r *Resolver) Created(ctx context.Context, ref Ref, digest string, auth *Auth) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	var nopts []name.Option
	if r.insecure(ref.Registry) {
		nopts = append(nopts, name.Insecure)
	}
	dref, err := name.NewDigest(ref.Pinned(digest), nopts...)
	if err != nil {
		return time.Time{}, &RegistryError{Err: fmt.Errorf("invalid image reference %q: %w", ref.Pinned(digest), err), local: true}
	}
	authn, err := r.authenticator(ref.Registry, auth)
	if err != nil {
		return time.Time{}, &RegistryError{Err: err, local: true}
	}
	rec := &retryAfterRecorder{next: r.opts.Transport}
	img, err := remote.Image(dref,
		remote.WithContext(ctx),
		remote.WithAuth(authn),
		remote.WithTransport(rec),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}),
		remote.WithRetryBackoff(remote.Backoff{Steps: 1}),
		remote.WithRetryPredicate(func(error) bool { return false }),
		remote.WithUserAgent("drover-imageresolve"),
	)
	var cfg *v1.ConfigFile
	if err == nil {
		cfg, err = img.ConfigFile()
	}
	if err != nil {
		re := &RegistryError{Err: fmt.Errorf("reading the image config of %s: %w", ref.Pinned(digest), err), RetryAfter: rec.retryAfter}
		var te *transport.Error
		if errors.As(err, &te) {
			re.StatusCode = te.StatusCode
		}
		return time.Time{}, re
	}
	return cfg.Created.Time, nil
}
