package config

import (
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"lightbox/blob"
)

// Backups are the settings of the backups the worker takes on a schedule;
// the CLI's backup commands take theirs from the command line.
type Backups struct {
	// Schedule is BACKUP_SCHEDULE: a cron spec as the worker's scheduler
	// reads it ("0 3 * * *", "@daily", "@every 6h"), in UTC; empty for no
	// scheduled backup.
	Schedule string
	// Period is the shortest time between two of the schedule's runs.
	Period time.Duration
	// To is BACKUP_TO, a folder or s3://BUCKET/PREFIX; required with a
	// schedule. A bucket is reached with ToStorage.
	To        blob.Location
	ToStorage Storage // LIGHTBOX_BACKUP_S3_*, else the service's S3_*
	// Keep is BACKUP_KEEP, how many complete backups each run keeps.
	Keep          int
	OriginalsOnly bool   // BACKUP_ORIGINALS_ONLY
	PGBinDir      string // PG_BINDIR, where pg_dump and pg_restore are when not found by themselves
}

// BackupS3Prefix starts settings that reach an s3:// backup location
// instead of the service's own S3_* ones (LIGHTBOX_BACKUP_S3_ENDPOINT…),
// for backups kept with another provider or account.
const BackupS3Prefix = "LIGHTBOX_BACKUP_"

// BackupS3FromLookup reads the settings that reach bucket, a backup
// location: each LIGHTBOX_BACKUP_S3_* where set, else its S3_*.
func BackupS3FromLookup(lookup func(string) (string, bool), bucket string) (Storage, error) {
	return S3FromLookup(func(name string) (string, bool) {
		if name == "S3_BUCKET" {
			return bucket, true
		}
		if v, ok := lookup(BackupS3Prefix + name); ok && strings.TrimSpace(v) != "" {
			return v, true
		}
		return lookup(name)
	})
}

// backups reads the BACKUP_* settings into c.
func (r *reader) backups(c *Config) {
	b := &c.Backups
	b.Schedule = r.str("BACKUP_SCHEDULE", "")
	b.Keep = r.integer("BACKUP_KEEP", 7, 1, 10_000)
	b.OriginalsOnly = r.boolean("BACKUP_ORIGINALS_ONLY", false)
	b.PGBinDir = r.str("PG_BINDIR", "")
	to := r.str("BACKUP_TO", "")
	if to != "" {
		loc, err := blob.ParseLocation(to)
		if err != nil {
			r.fail("BACKUP_TO", "%v", err)
		} else {
			b.To = loc
		}
		if loc.Bucket != "" {
			st, err := BackupS3FromLookup(r.lookup, loc.Bucket)
			if err != nil {
				r.fail("BACKUP_TO", "%s is reached with the S3_* settings (or %sS3_*): %s", to, BackupS3Prefix,
					strings.ReplaceAll(err.Error(), "\n", "; "))
			}
			b.ToStorage = st
		}
	}
	if b.Schedule == "" {
		return
	}
	if to == "" {
		r.fail("BACKUP_TO", "is required with BACKUP_SCHEDULE: a folder or s3://BUCKET/PREFIX")
	}
	sched, err := cron.ParseStandard(b.Schedule)
	if err != nil {
		r.fail("BACKUP_SCHEDULE", "%q is not a schedule such as \"0 3 * * *\" or \"@every 6h\": %v", b.Schedule, err)
		return
	}
	b.Period = shortestGap(sched)
	if b.Period < time.Minute {
		r.fail("BACKUP_SCHEDULE", "%q runs more often than once a minute", b.Schedule)
	}
}

// shortestGap is the shortest time between two of a schedule's runs over
// the next year or so: a spec such as "0 3,4 * * *" has gaps of 1h and 23h.
func shortestGap(s cron.Schedule) time.Duration {
	t := s.Next(time.Now().UTC())
	gap := time.Duration(1<<63 - 1)
	for range 400 {
		next := s.Next(t)
		if next.IsZero() {
			break
		}
		gap = min(gap, next.Sub(t))
		t = next
	}
	return gap
}
