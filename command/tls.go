package command

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/drover-project/drover/helper/tlsutil"
)

const tlsCACreateHelp = `Usage: drover tls ca create [options]

  Create a self-signed certificate authority for Drover's TLS setup. The
  certificate and its key are written to the current directory as
  <domain>-agent-ca.pem and <domain>-agent-ca-key.pem ("nomad-agent-ca.pem"
  by default); existing files are never overwritten.

CA Create Options:

  -common-name=<name>
    Common name of the CA (a serial number is appended).
    Defaults to "Nomad Agent CA".

  -days=<int>
    Number of days the CA is valid for. Defaults to 1825 (5 years).

  -domain=<domain>
    Domain of the cluster; names the files. Defaults to "nomad".`

const tlsCertCreateHelp = `Usage: drover tls cert create [options]

  Create a certificate signed by the CA, for a server (-server), a client
  agent (-client) or an operator's CLI (-cli). It is written to the current
  directory as <region>-<role>-<domain>.pem and <region>-<role>-<domain>-key.pem
  ("global-server-nomad.pem" by default); existing files are never
  overwritten.

  A server certificate names server.<region>.<domain>, localhost and
  127.0.0.1; a client certificate client.<region>.<domain>, localhost and
  127.0.0.1; a CLI certificate cli.<region>.<domain> and localhost. With
  tls.verify_server_hostname, only a certificate naming
  server.<region>.<domain> is accepted as a server: raft, forwarding and
  joins refuse any other.

Cert Create Options:

  -server, -client, -cli
    The certificate's role; exactly one is required.

  -ca=<path>
    The CA certificate. Defaults to <domain>-agent-ca.pem.

  -key=<path>
    The CA key. Defaults to <domain>-agent-ca-key.pem.

  -region=<region>
    The region the certificate is for. Defaults to "global".

  -domain=<domain>
    The cluster's domain. Defaults to "nomad".

  -days=<int>
    Number of days the certificate is valid for. Defaults to 365.

  -additional-dnsname=<name>
    An additional DNS name; may be given more than once.

  -additional-ipaddress=<ip>
    An additional IP address; may be given more than once.

  -dc=<datacenter>
    Accepted for scripts written for Consul's equivalent command; Drover
    certificates do not name a datacenter, so it changes nothing.`

// tlsFlags parses args for a tls command: help goes to stdout on -h,
// errors and help to stderr. ok is false when the command must return code.
func tlsFlags(m *Meta, fs *flag.FlagSet, args []string, help string) (code int, ok bool) {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case err == nil && fs.NArg() == 0:
		return 0, true
	case err == nil:
		m.errorf("This command takes no arguments")
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(m.Stdout, strings.TrimSpace(help))
		return 0, false
	default:
		m.errorf("Error parsing flags: %v", err)
	}
	fmt.Fprintln(m.Stderr, strings.TrimSpace(help))
	return 1, false
}

// tlsCACreate implements `drover tls ca create`.
func tlsCACreate(m *Meta, args []string) int {
	fs := flag.NewFlagSet("tls ca create", flag.ContinueOnError)
	var opts tlsutil.CAOptions
	domain := tlsutil.DefaultDomain
	fs.StringVar(&opts.CommonName, "common-name", "", "")
	fs.IntVar(&opts.Days, "days", tlsutil.DefaultCADays, "")
	fs.StringVar(&domain, "domain", domain, "")
	if code, ok := tlsFlags(m, fs, args, tlsCACreateHelp); !ok {
		return code
	}
	if opts.Days <= 0 {
		m.errorf("Error: -days must be a positive number of days, got %d", opts.Days)
		return 1
	}
	if domain == "" {
		m.errorf("Error: -domain must not be empty")
		return 1
	}
	certFile, keyFile := domain+"-agent-ca.pem", domain+"-agent-ca-key.pem"
	if err := refuseExisting(certFile, keyFile); err != nil {
		m.errorf("Error: %s", err)
		return 1
	}
	ca, err := tlsutil.GenerateCA(opts, time.Now())
	if err != nil {
		m.errorf("Error creating the CA: %s", err)
		return 1
	}
	if err := writePair(ca, certFile, keyFile); err != nil {
		m.errorf("Error: %s", err)
		return 1
	}
	m.outf("==> CA certificate saved to: %s", certFile)
	m.outf("==> CA certificate key saved to: %s", keyFile)
	return 0
}

// tlsCertCreate implements `drover tls cert create`.
func tlsCertCreate(m *Meta, args []string) int {
	fs := flag.NewFlagSet("tls cert create", flag.ContinueOnError)
	var (
		server, client, cli bool
		caFile, keyFile, dc string
		dnsNames, ipAddrs   stringSlice
		opts                tlsutil.CertOptions
	)
	fs.BoolVar(&server, "server", false, "")
	fs.BoolVar(&client, "client", false, "")
	fs.BoolVar(&cli, "cli", false, "")
	fs.StringVar(&caFile, "ca", "", "")
	fs.StringVar(&keyFile, "key", "", "")
	fs.StringVar(&opts.Region, "region", tlsutil.DefaultRegion, "")
	fs.StringVar(&opts.Domain, "domain", tlsutil.DefaultDomain, "")
	fs.IntVar(&opts.Days, "days", tlsutil.DefaultCertDays, "")
	fs.Var(&dnsNames, "additional-dnsname", "")
	fs.Var(&ipAddrs, "additional-ipaddress", "")
	fs.StringVar(&dc, "dc", "", "")
	if code, ok := tlsFlags(m, fs, args, tlsCertCreateHelp); !ok {
		return code
	}
	var roles []tlsutil.Role
	for role, set := range map[tlsutil.Role]bool{tlsutil.RoleServer: server, tlsutil.RoleClient: client, tlsutil.RoleCLI: cli} {
		if set {
			roles = append(roles, role)
		}
	}
	var problems []string
	if len(roles) != 1 {
		problems = append(problems, "exactly one of -server, -client or -cli is required")
	}
	if opts.Days <= 0 {
		problems = append(problems, fmt.Sprintf("-days must be a positive number of days, got %d", opts.Days))
	}
	if opts.Region == "" {
		problems = append(problems, "-region must not be empty")
	}
	if opts.Domain == "" {
		problems = append(problems, "-domain must not be empty")
	}
	for _, s := range ipAddrs {
		ip := net.ParseIP(s)
		if ip == nil {
			problems = append(problems, fmt.Sprintf("-additional-ipaddress %q is not an IP address", s))
			continue
		}
		opts.IPAddresses = append(opts.IPAddresses, ip)
	}
	opts.DNSNames = dnsNames
	if len(problems) > 0 {
		for _, p := range problems {
			m.errorf("Error: %s", p)
		}
		return 1
	}
	opts.Role = roles[0]
	if caFile == "" {
		caFile = opts.Domain + "-agent-ca.pem"
	}
	if keyFile == "" {
		keyFile = opts.Domain + "-agent-ca-key.pem"
	}
	var ca tlsutil.KeyPair
	var err error
	if ca.CertPEM, err = os.ReadFile(caFile); err != nil {
		m.errorf("Error reading the CA certificate: %s", err)
		return 1
	}
	if ca.KeyPEM, err = os.ReadFile(keyFile); err != nil {
		m.errorf("Error reading the CA key: %s", err)
		return 1
	}
	base := fmt.Sprintf("%s-%s-%s", opts.Region, opts.Role, opts.Domain)
	certOut, keyOut := base+".pem", base+"-key.pem"
	if err := refuseExisting(certOut, keyOut); err != nil {
		m.errorf("Error: %s", err)
		return 1
	}
	kp, err := tlsutil.GenerateCert(ca, opts, time.Now())
	if err != nil {
		m.errorf("Error creating the certificate: %s", err)
		return 1
	}
	if opts.Role == tlsutil.RoleServer {
		m.outf(`==> WARNING: Server Certificates grants authority to become a
    server and access all state in the cluster including root keys
    and all ACL tokens. Do not distribute them to production hosts
    that are not server nodes. Store them as securely as CA keys.`)
	}
	m.outf("==> Using CA file %s and CA key %s", caFile, keyFile)
	if err := writePair(kp, certOut, keyOut); err != nil {
		m.errorf("Error: %s", err)
		return 1
	}
	title := strings.ToUpper(string(opts.Role[:1])) + string(opts.Role[1:])
	m.outf("==> %s Certificate saved to: %s", title, certOut)
	m.outf("==> %s Certificate key saved to: %s", title, keyOut)
	return 0
}

// refuseExisting fails when any of paths exists.
func refuseExisting(paths ...string) error {
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("file %s already exists; remove it or work in another directory", p)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// writePair writes the certificate (0644) and its key (0600), refusing to
// replace an existing file.
func writePair(kp tlsutil.KeyPair, certFile, keyFile string) error {
	if err := writeNew(certFile, kp.CertPEM, 0o644); err != nil {
		return err
	}
	if err := writeNew(keyFile, kp.KeyPEM, 0o600); err != nil {
		_ = os.Remove(certFile)
		return err
	}
	return nil
}

func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
