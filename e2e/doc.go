// Package e2e holds Lightbox's browser tests: a real server and worker on
// loopback, against the test's own Postgres schema and Redis database,
// driven through headless Chromium with chromedp, as a person would use the
// pages. Screenshots land in artifacts/e2e/.
package e2e
