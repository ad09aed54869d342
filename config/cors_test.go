package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/aivis/aivis/config"
)

// TestCORSAllowedOrigins: cors_allowed_origins is read from the
// environment as a list of origins, and what is not an origin as a
// browser sends it is refused, naming the setting.
func TestCORSAllowedOrigins(t *testing.T) {
	cfg, _, err := config.Load(nil, env(map[string]string{"AIVIS_CORS_ALLOWED_ORIGINS": "https://app.example.com, http://localhost:3000"}), true, nil)
	if err != nil || !slices.Equal(cfg.CORSAllowedOrigins, []string{"https://app.example.com", "http://localhost:3000"}) {
		t.Fatalf("Load: %v, %v", cfg.CORSAllowedOrigins, err)
	}
	if d := config.Default(); len(d.CORSAllowedOrigins) != 0 {
		t.Errorf("default cors_allowed_origins %v, want none", d.CORSAllowedOrigins)
	}
	for _, bad := range []string{"*", "https://app.example.com/", "https://app.example.com/path", "HTTPS://APP.example.com", "ftp://app.example.com",
		"app.example.com", "https://user@app.example.com", "https://app.example.com?x=1"} {
		_, _, err := config.Load([]string{"--cors-allowed-origins", bad}, env(nil), true, nil)
		if err == nil || !strings.Contains(err.Error(), "cors_allowed_origins") {
			t.Errorf("cors_allowed_origins %q: %v, want it refused", bad, err)
		}
	}
}
