package app

import (
	"crypto/tls"
	"fmt"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/engines"
	"github.com/aivis/aivis/core/tracing"
)

// Check is what serve refuses of a configuration config.Load accepted,
// before it opens anything: the engines it names and their combination,
// the OTEL_* variables of getenv, and a configured certificate that does
// not load. aivis config check says the same.
func Check(cfg config.Config, getenv func(string) string) error {
	if err := engines.CheckServe(cfg); err != nil {
		return err
	}
	if err := tracing.Check(getenv); err != nil {
		return err
	}
	if cfg.API && cfg.TLSCert != "" {
		if _, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey); err != nil {
			return fmt.Errorf("tls: load %s: %w", cfg.TLSCert, err)
		}
	}
	return nil
}
