package testsvc

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
)

var redisServer = &service{
	name:     "Redis",
	env:      "AIVIS_TEST_REDIS_URL",
	loopback: "redis://127.0.0.1:6379/0",
	probe:    redisProbe,
	start:    startRedis,
	clean:    redisDelete,
}

// Redis returns a Redis URL and a key prefix for t alone; the keys under
// the prefix are deleted when t ends.
func Redis(t testing.TB) (url, prefix string) {
	t.Helper()
	return redisServer.withPrefix(t)
}

// redisDelete deletes every key under prefix (which holds no pattern
// characters).
func redisDelete(ctx context.Context, url, prefix string) error {
	c, err := redisClient(url)
	if err != nil {
		return err
	}
	defer c.Close()
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, prefix+"*", 1000).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := c.Unlink(ctx, keys...).Err(); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

func redisClient(url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	return redis.NewClient(opt), nil
}

func redisProbe(ctx context.Context, url string) error {
	c, err := redisClient(url)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Ping(ctx).Err()
}

func startRedis(s *service) (string, error) {
	bin, err := install("Redis", "redis-server", func() string { return lookup("redis-server", "/usr/bin") })
	if err != nil {
		return "", err
	}
	return s.runPrivate(func(port int) (spec, string, error) {
		dir, err := privateDir("redis")
		return spec{
			Argv: []string{bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
				"--save", "", "--appendonly", "no", "--daemonize", "no"},
			Dir:  dir,
			Stop: syscall.SIGTERM,
		}, fmt.Sprintf("redis://127.0.0.1:%d/0", port), err
	})
}
