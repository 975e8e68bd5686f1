// Package sdk holds kilo-sdk, the KILO app's TypeScript client for the
// Lightbox API (an npm package: see README.md and src/). Its Go test packs
// the SDK with npm, installs the tarball into an empty app, starts a real
// server and worker, and runs the SDK's Node tests against them.
package sdk
