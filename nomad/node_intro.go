package nomad

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/drover-project/drover/helper/metrics"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// Client introduction enforcement levels, the values of the server's
// client_introduction { enforcement }: what a node's first registration
// without a valid client introduction token gets.
const (
	// IntroductionNone accepts it silently.
	IntroductionNone = "none"
	// IntroductionWarn accepts it, logs a warning and counts it
	// (Nomad's default).
	IntroductionWarn = "warn"
	// IntroductionStrict refuses it: the node is not registered.
	IntroductionStrict = "strict"
)

// ClientIntroduction is the server's client_introduction block.
type ClientIntroduction struct {
	// Enforcement is IntroductionNone, IntroductionWarn or
	// IntroductionStrict; "" means IntroductionWarn.
	Enforcement string
	// DefaultTTL is the lifetime of a token whose request sets none, and
	// MaxTTL the longest a request may ask for; zero means
	// ClientIntroductionDefaultTTL and ClientIntroductionMaxTTL.
	DefaultTTL, MaxTTL time.Duration
}

func (c ClientIntroduction) withDefaults() ClientIntroduction {
	if c.Enforcement == "" {
		c.Enforcement = IntroductionWarn
	}
	if c.DefaultTTL <= 0 {
		c.DefaultTTL = ClientIntroductionDefaultTTL
	}
	if c.MaxTTL <= 0 {
		c.MaxTTL = ClientIntroductionMaxTTL
	}
	return c
}

// introductionVerdict is what a node registration gets.
type introductionVerdict int

const (
	introAccept introductionVerdict = iota
	introWarn                       // accept, log and count
	introRefuse
)

// decideIntroduction is the pure rule: a node's first registration (the
// server does not know it yet) must carry a valid introduction token
// (tokenErr nil) under strict enforcement, is accepted with a warning
// under warn, silently under none. A node the server knows already
// re-registers with its secret (checked before), whatever its token.
func decideIntroduction(enforcement string, firstRegistration bool, tokenErr error) introductionVerdict {
	if !firstRegistration || tokenErr == nil {
		return introAccept
	}
	switch enforcement {
	case IntroductionStrict:
		return introRefuse
	case IntroductionNone:
		return introAccept
	default:
		return introWarn
	}
}

// Reasons a client introduction token is not valid for a node.
var (
	errNoIntroToken = errors.New("no client introduction token")
	errIntroInvalid = errors.New("the client introduction token is not valid")
)

// verifyIntroductionToken checks token as the client introduction token of
// node at now: signed by a key of the keyring, a node-introduction subject
// with Drover's audience, not expired, and scoped to the node's pool and,
// when the token names one, to its name.
func verifyIntroductionToken(snap *state.Snapshot, token string, node *structs.Node, now time.Time) error {
	if token == "" {
		return errNoIntroToken
	}
	parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil || len(parsed.Headers) != 1 {
		return fmt.Errorf("%w: not a signed JWT", errIntroInvalid)
	}
	keys, err := snap.RootKeys(nil)
	if err != nil {
		return err
	}
	var key *structs.RootKey
	for _, k := range keys {
		if k.KeyID == parsed.Headers[0].KeyID {
			key = k
		}
	}
	if key == nil {
		return fmt.Errorf("%w: signed by an unknown key", errIntroInvalid)
	}
	priv, err := rsaKey(key)
	if err != nil {
		return err
	}
	var claims ClientIntroductionClaims
	if err := parsed.Claims(&priv.PublicKey, &claims); err != nil {
		return fmt.Errorf("%w: bad signature", errIntroInvalid)
	}
	if err := claims.ValidateWithLeeway(jwt.Expected{Time: now}, identityLeeway); err != nil {
		return fmt.Errorf("%w: %v", errIntroInvalid, err)
	}
	if !strings.HasPrefix(claims.Subject, "node-introduction:") || !claims.Audience.Contains(DefaultIdentityAudience) {
		return fmt.Errorf("%w: not a client introduction token", errIntroInvalid)
	}
	pool := node.NodePool
	if pool == "" {
		pool = structs.NodePoolDefault
	}
	if claims.NodePool != pool {
		return fmt.Errorf("%w: it is for node pool %q, the node is in %q", errIntroInvalid, claims.NodePool, pool)
	}
	if claims.NodeName != "" && claims.NodeName != node.Name {
		return fmt.Errorf("%w: it is for node name %q, the node is %q", errIntroInvalid, claims.NodeName, node.Name)
	}
	return nil
}

// introductionMetrics counts the registrations the introduction check let
// through with a warning or refused.
type introductionMetrics struct {
	unauthenticated *metrics.Counter
}

func newIntroductionMetrics(r *metrics.Registry) *introductionMetrics {
	return &introductionMetrics{unauthenticated: r.Counter("drover_client_introduction_unauthenticated_total",
		"First node registrations without a valid client introduction token, by what the server did (warned, refused).", "outcome")}
}

// checkIntroduction applies the server's client_introduction enforcement to
// the registration of node with introToken; first is whether the server
// knows no node of that ID. A refused registration is a 403 naming the
// reason.
func (s *Server) checkIntroduction(node *structs.Node, introToken string, first bool) error {
	cfg := s.config.ClientIntroduction.withDefaults()
	if !first || cfg.Enforcement == IntroductionNone {
		return nil
	}
	tokenErr := verifyIntroductionToken(s.State().Snapshot(), introToken, node, s.now())
	switch decideIntroduction(cfg.Enforcement, first, tokenErr) {
	case introRefuse:
		s.introMetrics.unauthenticated.WithLabels("refused").Inc()
		s.logger.Warn("node registration refused: no valid client introduction token", "node_id", node.ID, "node_name", node.Name, "node_pool", node.NodePool, "reason", tokenErr)
		return &structs.RequestError{Kind: structs.ErrForbidden,
			Msg: fmt.Sprintf("Permission denied: node registration requires a valid client introduction token (server client_introduction enforcement is %q): %v", cfg.Enforcement, tokenErr)}
	case introWarn:
		s.introMetrics.unauthenticated.WithLabels("warned").Inc()
		s.logger.Warn("node registered without a valid client introduction token", "node_id", node.ID, "node_name", node.Name, "node_pool", node.NodePool, "reason", tokenErr)
	}
	return nil
}
