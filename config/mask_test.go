package config_test

import (
	"testing"

	"github.com/aivis/aivis/config"
)

func TestMaskURL(t *testing.T) {
	for in, want := range map[string]string{
		"":                                      "",
		"postgres://u:pw@h:5432/db":             "postgres://u:xxxxx@h:5432/db",
		"postgres://u@h/db?password=pw&x=1":     "postgres://u@h/db?password=xxxxx&x=1",
		"host=h user=u password=pw dbname=db":   "host=h user=u password=xxxxx dbname=db",
		"host=h password = 'p w\\'x' dbname=db": "host=h password = xxxxx dbname=db",
		"redis://:pw@h:6379/0":                  "redis://:xxxxx@h:6379/0",
		"nats://h:4222":                         "nats://h:4222",
	} {
		if got := config.MaskURL(in); got != want {
			t.Errorf("MaskURL(%q) = %q, want %q", in, got, want)
		}
	}
}
