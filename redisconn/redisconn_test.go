package redisconn_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"lightbox/redisconn"
)

func TestParseSentinel(t *testing.T) {
	c, err := redisconn.Parse("redis-sentinel://:s3cret@10.0.0.1:26379,10.0.0.2:26380,sentinel-c/mymaster/3?dial_timeout=2s&sentinel_password=other")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Sentinel() {
		t.Fatal("not through sentinels")
	}
	want := asynq.RedisFailoverClientOpt{MasterName: "mymaster",
		SentinelAddrs:    []string{"10.0.0.1:26379", "10.0.0.2:26380", "sentinel-c:26379"},
		SentinelPassword: "other", Password: "s3cret", DB: 3, DialTimeout: 2 * time.Second}
	if got := c.Asynq(); !reflect.DeepEqual(got, want) {
		t.Fatalf("asynq option\n got %+v\nwant %+v", got, want)
	}
	rdb := c.Client()
	defer rdb.Close()
	if o := rdb.Options(); o.Password != "s3cret" || o.DB != 3 || o.DialTimeout != 2*time.Second {
		t.Fatalf("client options: password %q, db %d, dial timeout %v", o.Password, o.DB, o.DialTimeout)
	}

	c, err = redisconn.Parse("redis-sentinel://127.0.0.1/lightbox")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Asynq().(asynq.RedisFailoverClientOpt); got.MasterName != "lightbox" || got.DB != 0 ||
		!reflect.DeepEqual(got.SentinelAddrs, []string{"127.0.0.1:26379"}) || got.Password != "" {
		t.Fatalf("defaults: %+v", got)
	}
}

func TestParseDirect(t *testing.T) {
	c, err := redisconn.Parse("redis://user:pw@127.0.0.1:56379/7?pool_size=5")
	if err != nil {
		t.Fatal(err)
	}
	want := asynq.RedisClientOpt{Network: "tcp", Addr: "127.0.0.1:56379", Username: "user", Password: "pw", DB: 7, PoolSize: 5}
	if got := c.Asynq(); c.Sentinel() || !reflect.DeepEqual(got, want) {
		t.Fatalf("asynq option\n got %+v\nwant %+v", got, want)
	}
	if c, err := redisconn.Parse("rediss://cache.example.com:6380/0"); err != nil || c.Asynq().(asynq.RedisClientOpt).TLSConfig == nil {
		t.Fatalf("rediss: %v", err)
	}
}

// TestParseRefuses: each mistake is named, and the password never shows.
func TestParseRefuses(t *testing.T) {
	for url, want := range map[string]string{
		"http://127.0.0.1:6379":                                 "must start with redis://, rediss:// or redis-sentinel://",
		"redis:///0":                                            "no host",
		"redis://127.0.0.1:6379/x":                              "invalid database number",
		"redis-sentinel://:pw@127.0.0.1:26379":                  "no master name",
		"redis-sentinel://:pw@127.0.0.1:26379/":                 "no master name",
		"redis-sentinel://:pw@127.0.0.1:26379,/mymaster":        "no sentinel address",
		"redis-sentinel://:pw@127.0.0.1:26379/mymaster/x":       `database "x" is not a number`,
		"redis-sentinel://:pw@127.0.0.1:26379/mymaster/0/1":     "more than a master name and a database",
		"redis-sentinel://:pw@127.0.0.1:26379/mymaster?bogus=1": "unexpected option: bogus",
		"redis-sentinel://:pw@127.0.0.1:26379/mymaster?db=2":    "option db belongs in the URL itself",
	} {
		_, err := redisconn.Parse(url)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", url, err, want)
			continue
		}
		if strings.Contains(err.Error(), ":pw@") {
			t.Errorf("%s: the error shows the password: %v", url, err)
		}
		if strings.HasPrefix(url, "redis-sentinel") && !strings.Contains(err.Error(), redisconn.Example) {
			t.Errorf("%s: the error does not show the form: %v", url, err)
		}
	}
}
