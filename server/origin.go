package server

import (
	"net/http"
	"net/url"
)

// crossOrigin reports whether a cookie-authenticated request that changes
// something came from a page of another origin. Browsers send
// Sec-Fetch-Site on every request and Origin on every unsafe one, so a
// request with neither is not a browser's, and a cookie cannot be forged
// outside one. The origin may be PUBLIC_URL's or the request's own host,
// for pages reached under another name (a LAN address, a proxy).
func (s *Server) crossOrigin(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none": // "none": the user's own action, not a page's
		return false
	case "":
	default: // same-site and cross-site: another app, perhaps on a sibling host
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	o, err := url.Parse(origin)
	if err != nil || o.Host == "" {
		return true // "null": a sandboxed frame or a redirect from elsewhere
	}
	if o.Host == r.Host {
		return false
	}
	pub, err := url.Parse(s.cfg.PublicURL)
	return err != nil || o.Scheme != pub.Scheme || o.Host != pub.Host
}

func errCrossOrigin() *Error {
	return apiError(http.StatusForbidden, "cross_origin", "Requests from another origin are refused; call the API with a Bearer key.")
}
