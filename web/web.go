// Package web provides Lightbox's browser pages, embedded in the binary:
// the app (sign in, projects, the uploader, culling in a photo grid, a
// full-window loupe and compare by keyboard, moments and duplicates, the
// review of each group, editing in the loupe, exports and client
// galleries), the operators' admin page and the gallery page clients open.
// They are plain HTML, CSS and ES modules with no build step; the server
// serves them as they are.
package web

import "embed"

// Files holds index.html (the app), admin.html, share.html (a client's
// gallery) and static/ (scripts, styles, the hashing Web Worker).
//
//go:embed index.html admin.html share.html static
var Files embed.FS
