// Package redisconn provides the Redis connections a process makes from
// REDIS_URL: a go-redis client (rate limits, pub/sub, locks) and Asynq's
// connection option (queue, inspector, worker, scheduler), built from one
// parse so both reach the same server, also through Redis Sentinel.
//
// Accepted forms:
//
//	redis://[[user]:password@]host[:port][/db][?option=value]
//	rediss://…                         the same over TLS
//	redis-sentinel://[[user]:password@]host[:port][,host[:port]…]/master[/db][?option=value]
//
// A Sentinel URL lists the sentinels (port 26379 when left out), then the
// name they monitor the primary under, then the database (0 when left out).
// Its user and password are those of the primary and its replicas;
// sentinels protected by a password of their own take sentinel_username and
// sentinel_password. Other options are go-redis's own (dial_timeout,
// read_timeout, max_retries, pool_size, …).
package redisconn

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// Example is the Sentinel form, for error messages.
const Example = "redis-sentinel://:password@host:26379,host:26380/mymaster/0"

// Conn is a parsed REDIS_URL: one server, or a primary found through
// sentinels.
type Conn struct {
	direct   *redis.Options
	failover *redis.FailoverOptions
}

// Parse reads a REDIS_URL. Its errors name what is wrong without repeating
// the URL, which may hold a password.
func Parse(rawURL string) (*Conn, error) {
	if rest, ok := strings.CutPrefix(rawURL, "redis-sentinel://"); ok {
		o, err := parseSentinel(rest)
		if err != nil {
			return nil, fmt.Errorf("%w (the form is %s)", err, Example)
		}
		return &Conn{failover: o}, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("not a URL")
	}
	switch u.Scheme {
	case "redis", "rediss":
		if u.Host == "" {
			return nil, fmt.Errorf("no host")
		}
		o, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, err
		}
		return &Conn{direct: o}, nil
	}
	return nil, fmt.Errorf("must start with redis://, rediss:// or redis-sentinel://")
}

// parseSentinel reads what follows redis-sentinel:// and rewrites it into
// go-redis's own failover form, so its options keep their documented
// meaning. The list of hosts is split off by hand: net/url takes only one.
func parseSentinel(rest string) (*redis.FailoverOptions, error) {
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	hosts := authority
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		hosts = authority[i+1:]
		authority = authority[:i+1] + "sentinels"
	} else {
		authority = "sentinels"
	}
	u, err := url.Parse("redis://" + authority + tail)
	if err != nil {
		return nil, fmt.Errorf("not a URL")
	}
	var addrs []string
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return nil, fmt.Errorf("no sentinel address")
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(h, "26379")
		}
		host, port, err := net.SplitHostPort(h)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("sentinel %q is not host:port", h)
		}
		addrs = append(addrs, h)
	}
	path := strings.Split(strings.Trim(u.Path, "/"), "/")
	master, db := path[0], "0"
	switch {
	case master == "":
		return nil, fmt.Errorf("no master name after the sentinels")
	case len(path) > 2:
		return nil, fmt.Errorf("more than a master name and a database in the path")
	case len(path) == 2:
		if n, err := strconv.Atoi(path[1]); err != nil || n < 0 {
			return nil, fmt.Errorf("database %q is not a number", path[1])
		}
		db = path[1]
	}
	q := u.Query()
	for _, k := range []string{"master_name", "addr", "db", "username", "password"} {
		if q.Has(k) {
			return nil, fmt.Errorf("option %s belongs in the URL itself", k)
		}
	}
	sentinelUser, sentinelPass := q.Get("sentinel_username"), q.Get("sentinel_password")
	q.Del("sentinel_username")
	q.Del("sentinel_password")
	q.Set("master_name", master)
	q.Set("db", db)
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	if u.User != nil {
		q.Set("username", u.User.Username())
		if p, ok := u.User.Password(); ok {
			q.Set("password", p)
		}
	}
	g := url.URL{Scheme: "redis", Host: addrs[0], RawQuery: q.Encode()}
	o, err := redis.ParseFailoverURL(g.String())
	if err != nil {
		return nil, err
	}
	o.SentinelUsername, o.SentinelPassword = sentinelUser, sentinelPass
	return o, nil
}

// Sentinel reports whether the primary is found through sentinels.
func (c *Conn) Sentinel() bool { return c.failover != nil }

// Client returns a new go-redis client. Through sentinels it follows the
// primary when a replica is promoted.
func (c *Conn) Client() *redis.Client {
	if c.failover != nil {
		o := *c.failover
		return redis.NewFailoverClient(&o)
	}
	o := *c.direct
	return redis.NewClient(&o)
}

// Asynq returns the connection option of Asynq's clients, servers,
// inspectors and schedulers, with the same server, credentials, database,
// timeouts, pool size and TLS as Client.
func (c *Conn) Asynq() asynq.RedisConnOpt {
	if o := c.failover; o != nil {
		return asynq.RedisFailoverClientOpt{
			MasterName: o.MasterName, SentinelAddrs: o.SentinelAddrs,
			SentinelUsername: o.SentinelUsername, SentinelPassword: o.SentinelPassword,
			Username: o.Username, Password: o.Password, DB: o.DB,
			DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
			PoolSize: o.PoolSize, TLSConfig: o.TLSConfig,
		}
	}
	o := c.direct
	return asynq.RedisClientOpt{
		Network: o.Network, Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		PoolSize: o.PoolSize, TLSConfig: o.TLSConfig,
	}
}
