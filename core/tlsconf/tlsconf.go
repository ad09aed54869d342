// Package tlsconf provides the server's TLS configuration: a configured
// certificate, or a self-signed one made once in the data directory.
package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Material is a loaded certificate and where it came from.
type Material struct {
	Cert        tls.Certificate
	CertFile    string
	SelfSigned  bool
	Created     bool   // made on this start
	Fingerprint string // SHA-256 of the leaf, colon-separated hex
}

// Load reads certFile and keyFile, or, when both are empty, the self-signed
// pair in dir/tls, making it first if it is not there.
func Load(certFile, keyFile, dir string, hosts []string) (*Material, error) {
	m := &Material{CertFile: certFile}
	if certFile == "" {
		tdir := filepath.Join(dir, "tls")
		certFile, keyFile = filepath.Join(tdir, "cert.pem"), filepath.Join(tdir, "key.pem")
		m.CertFile, m.SelfSigned = certFile, true
		if _, err := os.Stat(certFile); errors.Is(err, os.ErrNotExist) {
			created, err := selfSign(tdir, hosts)
			if err != nil {
				return nil, err
			}
			m.Created = created
		}
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: load %s: %w", certFile, err)
	}
	m.Cert = cert
	sum := sha256.Sum256(cert.Certificate[0])
	m.Fingerprint = strings.ToUpper(hex.EncodeToString(sum[:]))
	var b strings.Builder
	for i := 0; i < len(m.Fingerprint); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(m.Fingerprint[i : i+2])
	}
	m.Fingerprint = b.String()
	return m, nil
}

// Config is the server's TLS configuration: TLS 1.2 and newer only.
func (m *Material) Config() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{m.Cert},
		NextProtos:   []string{"h2", "http/1.1"},
	}
}

// selfSign makes the self-signed pair in dir, unless another process makes
// it first: the pair is written into a directory of its own, renamed to dir
// only if dir is missing or empty, so that processes starting at once on
// one data directory all serve the one pair that won.
func selfSign(dir string, hosts []string) (created bool, err error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return false, fmt.Errorf("tls: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".new-")
	if err != nil {
		return false, fmt.Errorf("tls: %w", err)
	}
	defer os.RemoveAll(tmp) // gone once renamed
	if err := writePair(tmp, hosts); err != nil {
		return false, err
	}
	err = os.Rename(tmp, dir)
	if err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "cert.pem")); serr == nil {
			return false, nil // made by another process meanwhile
		}
		return false, fmt.Errorf("tls: %w", err)
	}
	return true, nil
}

// writePair writes a new self-signed certificate and its key in dir.
func writePair(dir string, hosts []string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("tls: generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"aivis"}, CommonName: "aivis self-signed"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(2, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	seen := map[string]bool{}
	for _, h := range append([]string{"localhost", "127.0.0.1", "::1"}, hosts...) {
		if h == "" || seen[h] {
			continue
		}
		seen[h] = true
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("tls: create certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "key.pem"), "PRIVATE KEY", keyDER, 0o600); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, "cert.pem"), "CERTIFICATE", der, 0o644)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode); err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	return nil
}
