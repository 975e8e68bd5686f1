package blob

import (
	"errors"
	"fmt"
	"strings"
)

// Location is a place blobs are kept apart from the service's own: a
// folder, or an S3 bucket with a key prefix. Backups go to one.
type Location struct {
	Dir    string
	Bucket string
	Prefix string // "" or ending in "/"
}

// ParseLocation reads "DIR" or "s3://BUCKET[/PREFIX]".
func ParseLocation(s string) (Location, error) {
	if s == "" {
		return Location{}, errors.New("no location given")
	}
	if rest, ok := strings.CutPrefix(s, "s3://"); ok {
		bucket, prefix, _ := strings.Cut(rest, "/")
		prefix = strings.Trim(prefix, "/")
		if bucket == "" {
			return Location{}, fmt.Errorf("%q names no bucket: want s3://BUCKET/PREFIX", s)
		}
		if prefix != "" {
			if err := CheckKey(prefix); err != nil {
				return Location{}, fmt.Errorf("%q: the prefix is not a usable key", s)
			}
			prefix += "/"
		}
		return Location{Bucket: bucket, Prefix: prefix}, nil
	}
	if strings.Contains(s, "://") {
		return Location{}, fmt.Errorf("%q: want a folder or s3://BUCKET/PREFIX", s)
	}
	return Location{Dir: s}, nil
}

func (l Location) String() string {
	if l.Bucket != "" {
		return "s3://" + l.Bucket + "/" + l.Prefix
	}
	return l.Dir
}
