package config_test

import (
	"testing"

	"lightbox/config"
)

// TestRedisSentinelURL: REDIS_URL may name sentinels, and a malformed one
// is reported with the form it should take, without its password.
func TestRedisSentinelURL(t *testing.T) {
	url := "redis-sentinel://:pw@10.0.0.1:26379,10.0.0.2:26379/mymaster/0"
	c, err := config.FromLookup(lookup(map[string]string{"REDIS_URL": url}))
	if err != nil || c.RedisURL != url {
		t.Fatalf("%q: %v", c.RedisURL, err)
	}
	_, err = config.FromLookup(lookup(map[string]string{"REDIS_URL": "redis-sentinel://:pw@10.0.0.1:26379,10.0.0.2:26379"}))
	want := "REDIS_URL: no master name after the sentinels (the form is redis-sentinel://:password@host:26379,host:26380/mymaster/0)"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}
