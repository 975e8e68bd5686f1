// Package e2e holds Lightbox's browser tests: a real server and worker on
// loopback, against the test's own Postgres schema and Redis database,
// driven through headless Chromium with chromedp, as a person would use the
// pages. Screenshots land in artifacts/e2e/.
//
// The tests run in parallel (two at a time, as -parallel says): each has
// its own stack, database, Redis database and browser context, and most of
// a test's time goes on waiting for the pipeline, a rate limit or a
// failover, which another test's work fills.
package e2e
