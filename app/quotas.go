package app

import (
	"errors"

	"lightbox/store"
)

// checkQuota gives err, a check of u (store.Usage.Check…), as a QuotaError
// saying what was refused.
func (a *App) checkQuota(u *store.Usage, use QuotaUse, err error) error {
	var q *store.QuotaError
	if !errors.As(err, &q) {
		return err
	}
	return &QuotaError{QuotaError: q, For: use, NextExpiry: u.NextExpiry}
}
