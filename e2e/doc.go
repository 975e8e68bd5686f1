// Package e2e holds Lightbox's browser tests: a real server and worker on
// loopback, against the test's own Postgres database and Redis database,
// driven through headless Chromium with chromedp, as a person would use the
// pages. Screenshots land in artifacts/e2e/.
//
// The tests run in parallel, four at a time unless -parallel says
// otherwise: each has its own stack, databases and browser context, and
// most of a test's time goes on waiting for the pipeline, a rate limit or
// a failover, which another test's work fills.
package e2e
