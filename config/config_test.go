package config_test

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lightbox/abuse/password"
	"lightbox/config"
	"lightbox/tasks"
)

func lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func TestDefaults(t *testing.T) {
	c, err := config.FromLookup(lookup(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPAddr != "127.0.0.1:8080" || c.DataDir != ".data" || c.PublicURL != "http://127.0.0.1:8080" {
		t.Fatalf("defaults: addr %q, data %q, public %q", c.HTTPAddr, c.DataDir, c.PublicURL)
	}
	if !maps.Equal(c.QueueWeights, tasks.DefaultWeights) || c.QueueWeights["faces"] != 1 || c.QueueWeights["low"] != 3 {
		t.Fatalf("queue weights %v, want %v", c.QueueWeights, tasks.DefaultWeights)
	}
	if c.UploadURLTTL != 5*time.Minute || c.MaxUploadBytes != 200<<20 || c.BodyReadTimeout != time.Minute {
		t.Fatalf("upload defaults: ttl %v, max %d, body read timeout %v", c.UploadURLTTL, c.MaxUploadBytes, c.BodyReadTimeout)
	}
	if c.FacesURL != "" || c.FacesTimeout != 2*time.Minute || c.FacesRatePerMin != 600 {
		t.Fatalf("faces defaults: url %q, timeout %v, rate %d", c.FacesURL, c.FacesTimeout, c.FacesRatePerMin)
	}
	if c.PasswordHashes != password.DefaultSlots() || c.PasswordOwnerHashes != 1 {
		t.Fatalf("password hashes at once %d for viewers, %d for owners; want the machine's %d, and 1",
			c.PasswordHashes, c.PasswordOwnerHashes, password.DefaultSlots())
	}
}

func TestEveryProblemReportedAtOnce(t *testing.T) {
	_, err := config.FromLookup(lookup(map[string]string{
		"DATABASE_URL":       "mysql://x/y",
		"REDIS_URL":          "::not a url",
		"HTTP_ADDR":          "8080",
		"WORKER_CONCURRENCY": "many",
		"QUEUE_WEIGHTS":      "critical=6,default=zero",
		"LOG_FORMAT":         "xml",
		"MAX_UPLOAD_BYTES":   "-3",
		"EMBED_TEXT":         "true",
		"CHAIN_RETIRED_KEYS": strings.Repeat("ab", 32) + ", not-a-key",
		"BODY_READ_TIMEOUT":  "100ms",
		"FACES_URL":          "127.0.0.1:57080/v1/faces",
		"FACES_SECRET":       "too short",
		"PASSWORD_HASHES":    "0",
		"WORKER_QUEUES":      "thumbnails,urgent",
	}))
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	for _, name := range []string{"DATABASE_URL", "REDIS_URL", "HTTP_ADDR", "WORKER_CONCURRENCY", "QUEUE_WEIGHTS", "LOG_FORMAT", "MAX_UPLOAD_BYTES", "EMBED_TEXT", "CHAIN_RETIRED_KEYS", "BODY_READ_TIMEOUT", "FACES_URL", "FACES_SECRET", "PASSWORD_HASHES", "WORKER_QUEUES"} {
		if !strings.Contains(msg, name+":") {
			t.Errorf("error does not name %s:\n%s", name, msg)
		}
	}
	if !strings.Contains(msg, "missing queue(s) default, low") {
		t.Errorf("error does not name the missing queues:\n%s", msg)
	}
	if !strings.Contains(msg, `"urgent" is not a queue`) || strings.Contains(msg, `"thumbnails" is not`) {
		t.Errorf("error does not name the one unknown worker queue:\n%s", msg)
	}
	if !strings.Contains(msg, `"not-a-key" is not an Ed25519 public key`) || strings.Contains(msg, `"abab`) {
		t.Errorf("error does not name the one bad retired key:\n%s", msg)
	}
}

// Weights written before thumbnails and face scans had queues of their
// own keep their meaning: thumbnails as far above default as ever, face
// scans below everything, and a worker may be told to serve them.
func TestQueueWeightsLeftOutAreAdded(t *testing.T) {
	for weights, want := range map[string]map[string]int{
		"critical=6,default=3,low=1":               {"thumbnails": 200, "critical": 6, "default": 3, "low": 1, "faces": 1},
		"critical=60,default=30,low=10":            {"thumbnails": 2000, "critical": 60, "default": 30, "low": 10, "faces": 3},
		"thumbnails=50,critical=6,default=3,low=2": {"thumbnails": 50, "critical": 6, "default": 3, "low": 2, "faces": 1},
		"critical=6,default=3,low=2,faces=5":       {"thumbnails": 200, "critical": 6, "default": 3, "low": 2, "faces": 5},
	} {
		c, err := config.FromLookup(lookup(map[string]string{"QUEUE_WEIGHTS": weights, "WORKER_QUEUES": "faces"}))
		if err != nil {
			t.Fatalf("%s: %v", weights, err)
		}
		if !maps.Equal(c.QueueWeights, want) {
			t.Errorf("%s: weights %v, want %v", weights, c.QueueWeights, want)
		}
	}
}

func TestRetiredChainKeys(t *testing.T) {
	a, b := strings.Repeat("ab", 32), strings.Repeat("0C", 32)
	c, err := config.FromLookup(lookup(map[string]string{"CHAIN_RETIRED_KEYS": a + ", " + b + ","}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ChainRetiredKeys) != 2 || c.ChainRetiredKeys[0] != a || c.ChainRetiredKeys[1] != strings.ToLower(b) {
		t.Fatalf("retired keys %q", c.ChainRetiredKeys)
	}
}

func TestSizesAndWeights(t *testing.T) {
	c, err := config.FromLookup(lookup(map[string]string{
		"MAX_UPLOAD_BYTES": "50MiB",
		"QUEUE_WEIGHTS":    "critical=10, default=2, low=1",
		"PUBLIC_URL":       "https://photos.example.org/",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxUploadBytes != 50<<20 {
		t.Errorf("MAX_UPLOAD_BYTES = %d", c.MaxUploadBytes)
	}
	if c.QueueWeights["critical"] != 10 {
		t.Errorf("weights %v", c.QueueWeights)
	}
	if c.PublicURL != "https://photos.example.org" || !c.SecureCookies() {
		t.Errorf("public URL %q, secure %v", c.PublicURL, c.SecureCookies())
	}
}

func TestOperationsSettings(t *testing.T) {
	c, err := config.FromLookup(lookup(map[string]string{
		"METRICS_TOKEN":   "0123456789abcdef",
		"METRICS_ADDR":    "0.0.0.0:9090",
		"CORS_ORIGINS":    "https://app.example.com/, http://localhost:5173",
		"TRUSTED_PROXIES": "10.0.0.0/8, 127.0.0.1",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.CORSOrigins, " ") != "https://app.example.com http://localhost:5173" {
		t.Fatalf("origins %q", c.CORSOrigins)
	}
	if strings.Join(c.TrustedProxies, " ") != "10.0.0.0/8 127.0.0.1" || c.MetricsAddr != "0.0.0.0:9090" {
		t.Fatalf("proxies %q, metrics addr %q", c.TrustedProxies, c.MetricsAddr)
	}

	_, err = config.FromLookup(lookup(map[string]string{
		"METRICS_TOKEN":   "short",
		"METRICS_ADDR":    "9090",
		"CORS_ORIGINS":    "https://app.example.com/path,*",
		"TRUSTED_PROXIES": "proxy.internal",
	}))
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"METRICS_TOKEN:", "METRICS_ADDR:", `CORS_ORIGINS: "https://app.example.com/path"`, `CORS_ORIGINS: "*"`, "TRUSTED_PROXIES:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %s:\n%v", want, err)
		}
	}
	// Beyond loopback, the worker's metrics need the token.
	_, err = config.FromLookup(lookup(map[string]string{"METRICS_ADDR": "0.0.0.0:9090"}))
	if err == nil || !strings.Contains(err.Error(), "METRICS_TOKEN") {
		t.Fatalf("metrics beyond loopback without a token: %v", err)
	}
	if _, err := config.FromLookup(lookup(map[string]string{"METRICS_ADDR": "127.0.0.1:9090"})); err != nil {
		t.Fatal(err)
	}
}

func TestQuotasAndAddressBudgets(t *testing.T) {
	c, err := config.FromLookup(lookup(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.QuotaBytes != 1<<40 || c.QuotaFilesInFlight != 10_000 || c.QuotaExports != 20 {
		t.Fatalf("quota defaults: %d bytes, %d files, %d exports", c.QuotaBytes, c.QuotaFilesInFlight, c.QuotaExports)
	}
	if c.RateSignInPerMinute != 3 || c.RateSignInBurst != 30 || c.RateAuthFailuresBurst != 20 || c.RateReadyzPerMinute != 300 {
		t.Fatalf("address budgets: %+v", c)
	}
	c, err = config.FromLookup(lookup(map[string]string{"QUOTA_BYTES": "2TiB", "QUOTA_FILES_IN_FLIGHT": "0", "QUOTA_EXPORTS": "0"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.QuotaBytes != 2<<40 || c.QuotaFilesInFlight != 0 || c.QuotaExports != 0 {
		t.Fatalf("quotas: %d bytes, %d files, %d exports", c.QuotaBytes, c.QuotaFilesInFlight, c.QuotaExports)
	}
	_, err = config.FromLookup(lookup(map[string]string{
		"QUOTA_BYTES": "-1", "QUOTA_FILES_IN_FLIGHT": "lots", "QUOTA_EXPORTS": "-2", "RATE_READYZ_PER_MINUTE": "0",
	}))
	for _, name := range []string{"QUOTA_BYTES", "QUOTA_FILES_IN_FLIGHT", "QUOTA_EXPORTS", "RATE_READYZ_PER_MINUTE"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("error %v does not name %s", err, name)
		}
	}
}

func TestFacesSecretFromAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "faces-secret")
	secret := strings.Repeat("0123456789abcdef", 4)
	os.WriteFile(file, []byte(secret+"\n"), 0o600)
	c, err := config.FromLookup(lookup(map[string]string{"FACES_SECRET_FILE": file}))
	if err != nil || c.FacesSecret != secret {
		t.Fatalf("FACES_SECRET_FILE: %q, %v", c.FacesSecret, err)
	}
	_, err = config.FromLookup(lookup(map[string]string{"FACES_SECRET_FILE": file, "FACES_SECRET": secret}))
	if err == nil || !strings.Contains(err.Error(), "FACES_SECRET_FILE: give FACES_SECRET or FACES_SECRET_FILE, not both") {
		t.Fatalf("both: %v", err)
	}
}

// Scheduled backups are off by default; turned on, every mistake in their
// settings is reported at once, with the rest's.
func TestBackupSettings(t *testing.T) {
	c, err := config.FromLookup(lookup(nil))
	if err != nil {
		t.Fatal(err)
	}
	if b := c.Backups; b.Schedule != "" || b.Keep != 7 || b.OriginalsOnly {
		t.Fatalf("backup defaults %+v; want off, keeping 7, everything", b)
	}

	c, err = config.FromLookup(lookup(map[string]string{"BACKUP_SCHEDULE": "0 3,4 * * *", "BACKUP_TO": "/mnt/backups",
		"BACKUP_KEEP": "3", "BACKUP_ORIGINALS_ONLY": "true"}))
	if err != nil {
		t.Fatal(err)
	}
	if b := c.Backups; b.To.Dir != "/mnt/backups" || b.Keep != 3 || !b.OriginalsOnly || b.Period != time.Hour {
		t.Fatalf("backups %+v; want to /mnt/backups, keeping 3, originals only, an hour apart at least", b)
	}
	c, err = config.FromLookup(lookup(map[string]string{"BACKUP_SCHEDULE": "@every 6h", "BACKUP_TO": "s3://backups/lightbox",
		"S3_ENDPOINT": "http://127.0.0.1:9000", "S3_ACCESS_KEY_ID": "service", "S3_SECRET_ACCESS_KEY": "service-secret",
		"LIGHTBOX_BACKUP_S3_ACCESS_KEY_ID": "backups", "LIGHTBOX_BACKUP_S3_SECRET_ACCESS_KEY": "backups-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	if b := c.Backups; b.To.Bucket != "backups" || b.To.Prefix != "lightbox/" || b.Period != 6*time.Hour ||
		b.ToStorage.S3Bucket != "backups" || b.ToStorage.S3AccessKeyID != "backups" || b.ToStorage.S3Endpoint != "http://127.0.0.1:9000" {
		t.Fatalf("backups to a bucket %+v", b)
	}

	for _, c := range []struct {
		env  map[string]string
		says []string
	}{
		{map[string]string{"BACKUP_SCHEDULE": "at three", "BACKUP_KEEP": "0", "BACKUP_ORIGINALS_ONLY": "maybe", "LOG_FORMAT": "xml"},
			[]string{`BACKUP_SCHEDULE: "at three" is not a schedule`, "BACKUP_TO: is required with BACKUP_SCHEDULE", "BACKUP_KEEP:",
				"BACKUP_ORIGINALS_ONLY:", "LOG_FORMAT:"}},
		{map[string]string{"BACKUP_SCHEDULE": "@every 10s", "BACKUP_TO": "ftp://example.org/x"},
			[]string{"BACKUP_SCHEDULE: \"@every 10s\" runs more often than once a minute", "BACKUP_TO:", "want a folder or s3://"}},
		{map[string]string{"BACKUP_SCHEDULE": "0 3 * * *", "BACKUP_TO": "s3://backups"},
			[]string{"BACKUP_TO: s3://backups is reached with the S3_* settings", "S3_ENDPOINT", "S3_ACCESS_KEY_ID"}},
	} {
		_, err := config.FromLookup(lookup(c.env))
		if err == nil {
			t.Errorf("%v: want an error", c.env)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%v: the error does not say %q:\n%s", c.env, s, err)
			}
		}
	}
}
