package tlsutil

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// Default lifetimes, as Nomad's `tls` commands have them.
const (
	DefaultCADays   = 5 * 365
	DefaultCertDays = 365
	DefaultDomain   = "nomad"
	DefaultRegion   = "global"
	// DefaultCACommonName is the subject of a generated CA.
	DefaultCACommonName = "Nomad Agent CA"
)

// Role is what a certificate lets its holder act as.
type Role string

// The roles of Drover certificates.
const (
	RoleServer Role = "server"
	RoleClient Role = "client"
	RoleCLI    Role = "cli"
)

// RoleName is the DNS name that marks a certificate with role in region:
// "server.global.nomad".
func RoleName(role Role, region, domain string) string {
	if region == "" {
		region = DefaultRegion
	}
	if domain == "" {
		domain = DefaultDomain
	}
	return string(role) + "." + region + "." + domain
}

// CAOptions configure GenerateCA. Zero values take the defaults.
type CAOptions struct {
	CommonName string // DefaultCACommonName
	Days       int    // DefaultCADays
}

// CertOptions configure GenerateCert.
type CertOptions struct {
	Role   Role   // required
	Region string // DefaultRegion
	Domain string // DefaultDomain
	Days   int    // DefaultCertDays
	// DNSNames and IPAddresses are added to the role's default names:
	// the role name and "localhost" for every role, and 127.0.0.1 for
	// servers and clients (a CLI certificate has no IP address).
	DNSNames    []string
	IPAddresses []net.IP
}

// KeyPair is a PEM-encoded certificate and its PEM-encoded private key.
type KeyPair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// GenerateCA creates a self-signed CA valid from now (less a minute of
// clock skew) for opts.Days.
func GenerateCA(opts CAOptions, now time.Time) (KeyPair, error) {
	if opts.CommonName == "" {
		opts.CommonName = DefaultCACommonName
	}
	if opts.Days == 0 {
		opts.Days = DefaultCADays
	}
	if opts.Days < 0 {
		return KeyPair{}, fmt.Errorf("days must be positive, got %d", opts.Days)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return KeyPair{}, err
	}
	skid, err := keyID(key.Public())
	if err != nil {
		return KeyPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: opts.CommonName + " " + serial.String()},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.AddDate(0, 0, opts.Days),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		SubjectKeyId:          skid,
		AuthorityKeyId:        skid,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("create CA certificate: %w", err)
	}
	return encode(der, key)
}

// GenerateCert creates a certificate for opts.Role signed by ca, valid from
// now (less a minute of clock skew) for opts.Days. Server and client
// certificates are good for both ends of a TLS connection (agents dial
// each other); a CLI certificate only authenticates a client.
func GenerateCert(ca KeyPair, opts CertOptions, now time.Time) (KeyPair, error) {
	var ext []x509.ExtKeyUsage
	ips := []net.IP{}
	switch opts.Role {
	case RoleServer, RoleClient:
		ext = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		ips = append(ips, net.IPv4(127, 0, 0, 1))
	case RoleCLI:
		ext = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	default:
		return KeyPair{}, fmt.Errorf("role must be %q, %q or %q, got %q", RoleServer, RoleClient, RoleCLI, opts.Role)
	}
	if opts.Days == 0 {
		opts.Days = DefaultCertDays
	}
	if opts.Days < 0 {
		return KeyPair{}, fmt.Errorf("days must be positive, got %d", opts.Days)
	}
	caCert, caKey, err := parseCA(ca)
	if err != nil {
		return KeyPair{}, err
	}
	name := RoleName(opts.Role, opts.Region, opts.Domain)
	dns := []string{name, "localhost"}
	for _, d := range opts.DNSNames {
		if d != "" && !slices.Contains(dns, d) {
			dns = append(dns, d)
		}
	}
	for _, ip := range opts.IPAddresses {
		if !slices.ContainsFunc(ips, ip.Equal) {
			ips = append(ips, ip)
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("generate key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return KeyPair{}, err
	}
	skid, err := keyID(key.Public())
	if err != nil {
		return KeyPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.AddDate(0, 0, opts.Days),
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           ext,
		DNSNames:              dns,
		IPAddresses:           ips,
		SubjectKeyId:          skid,
		AuthorityKeyId:        caCert.SubjectKeyId,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		return KeyPair{}, fmt.Errorf("create certificate: %w", err)
	}
	return encode(der, key)
}

// parseCA decodes a CA key pair and checks that it can sign.
func parseCA(ca KeyPair) (*x509.Certificate, crypto.Signer, error) {
	block, _ := pem.Decode(ca.CertPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, nil, errors.New("CA file holds no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, nil, errors.New("the CA certificate is not a certificate authority")
	}
	kb, _ := pem.Decode(ca.KeyPEM)
	if kb == nil {
		return nil, nil, errors.New("CA key file holds no PEM key")
	}
	key, err := parsePrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parse CA key: %w", err)
	}
	return cert, key, nil
}

func parsePrivateKey(der []byte) (crypto.Signer, error) {
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, errors.New("not an EC, PKCS#1 or PKCS#8 private key")
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported key type %T", k)
	}
	return s, nil
}

func encode(der []byte, key *ecdsa.PrivateKey) (KeyPair, error) {
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("encode key: %w", err)
	}
	return KeyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
	}, nil
}

// serialNumber is a random 128-bit positive serial.
func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// keyID is the SHA-256 of the public key, truncated as RFC 7093 allows.
func keyID(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("marshal public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return sum[:20], nil
}
