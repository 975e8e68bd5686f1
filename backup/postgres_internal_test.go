package backup

import (
	"slices"
	"testing"
)

// TestLibpqEnv: a DATABASE_URL in either of lib/pq's forms reaches
// pg_dump as the same connection: no password on the command line,
// run-time parameters such as search_path in PGOPTIONS, lib/pq's own
// switches left out.
func TestLibpqEnv(t *testing.T) {
	for _, c := range []struct {
		dsn  string
		want []string
		db   string
	}{
		{"postgres://ana:s%20cret@db.example.org:6432/photos?sslmode=verify-full&search_path=lightbox&binary_parameters=yes",
			[]string{"PGUSER=ana", "PGPASSWORD=s cret", "PGHOST=db.example.org", "PGPORT=6432", "PGDATABASE=photos",
				"PGSSLMODE=verify-full", "PGOPTIONS=-c search_path=lightbox"}, "photos"},
		{`host=/var/run/postgresql dbname='my photos' user=ana password='it\'s a secret' application_name=lb search_path='a b'`,
			[]string{"PGHOST=/var/run/postgresql", "PGDATABASE=my photos", "PGUSER=ana", "PGPASSWORD=it's a secret",
				"PGAPPNAME=lb", `PGOPTIONS=-c search_path=a\ b`}, "my photos"},
	} {
		env, db, err := libpqEnv(c.dsn)
		if err != nil {
			t.Fatalf("%s: %v", c.dsn, err)
		}
		slices.Sort(env)
		slices.Sort(c.want)
		if !slices.Equal(env, c.want) || db != c.db {
			t.Errorf("%s:\n got %q, %q\nwant %q, %q", c.dsn, env, db, c.want, c.db)
		}
	}
	if _, _, err := libpqEnv("host=x dbname='open"); err == nil {
		t.Error("an unclosed quote was taken")
	}
}

// TestParseLocation: a folder, a bucket with or without a prefix, and
// what is neither.
func TestParseLocation(t *testing.T) {
	for in, want := range map[string]Location{
		"/mnt/backups":      {Dir: "/mnt/backups"},
		"backups":           {Dir: "backups"},
		"s3://b":            {Bucket: "b"},
		"s3://b/nightly":    {Bucket: "b", Prefix: "nightly/"},
		"s3://b/a/nightly/": {Bucket: "b", Prefix: "a/nightly/"},
	} {
		if got, err := ParseLocation(in); err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "s3://", "s3:///x", "s3://b/a/../c", "https://example.org/x", "file:///x"} {
		if got, err := ParseLocation(bad); err == nil {
			t.Errorf("%q taken as %+v", bad, got)
		}
	}
}
