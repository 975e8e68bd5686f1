package server

import "net/http"

// errorCodes is every code an API error answers with, the status it comes
// with, and what it means to a client. openapi.yaml's Error.code lists the
// same codes, and TestErrorCodesAreCatalogued holds the code to both: a
// code answered anywhere in this package must be here with its status.
// Failed jobs and assets carry codes of their own (jobs.ErrorCode).
var errorCodes = []errorCode{
	// The request itself.
	{Code: "validation_failed", Status: http.StatusBadRequest, Meaning: "A field is missing or wrong; details.fields names each with its problem."},
	{Code: "invalid_json", Status: http.StatusBadRequest, Meaning: "The body is not one JSON value of the expected shape (malformed, trailing data, an unknown field)."},
	{Code: "invalid_body", Status: http.StatusBadRequest, Meaning: "The body could not be read."},
	{Code: "invalid_cursor", Status: http.StatusBadRequest, Meaning: "A page cursor this service did not issue."},
	{Code: "invalid_key", Status: http.StatusBadRequest, Meaning: "An object key in a storage URL that is not one of ours."},
	{Code: "not_a_session", Status: http.StatusBadRequest, Meaning: "Signing out takes a session's token; an API key is revoked instead."},
	{Code: "range_too_large", Status: http.StatusBadRequest, Meaning: "A chain verification asks for more entries than one call verifies."},
	{Code: "size_mismatch", Status: http.StatusBadRequest, Meaning: "An upload's bytes differ in number from those prepared."},
	{Code: "too_many_actions", Status: http.StatusBadRequest, Meaning: "A culling request carries more actions than one takes."},
	{Code: "upload_interrupted", Status: http.StatusBadRequest, Meaning: "An upload ended before all its bytes arrived."},
	{Code: "body_too_large", Status: http.StatusRequestEntityTooLarge, Meaning: "The body is larger than the route takes."},
	{Code: "too_large", Status: http.StatusRequestEntityTooLarge, Meaning: "An upload is larger than the bytes it declared."},
	{Code: "body_timeout", Status: http.StatusRequestTimeout, Meaning: "The body came too slowly."},
	{Code: "unsupported_media_type", Status: http.StatusUnsupportedMediaType, Meaning: "The body is not labelled application/json."},
	{Code: "content_type_mismatch", Status: http.StatusUnsupportedMediaType, Meaning: "An upload's Content-Type differs from the one its URL was signed for."},
	{Code: "idempotency_key_reused", Status: http.StatusUnprocessableEntity, Meaning: "An Idempotency-Key sent again with a different request."},
	{Code: "route_not_found", Status: http.StatusNotFound, Meaning: "No route (or :action) has this path."},
	{Code: "method_not_allowed", Status: http.StatusMethodNotAllowed, Meaning: "The route does not take this method."},

	// Who asks.
	{Code: "unauthenticated", Status: http.StatusUnauthorized, Meaning: "No credentials were sent."},
	{Code: "invalid_credentials", Status: http.StatusUnauthorized, Meaning: "The API key or stream token is unknown, revoked or malformed."},
	{Code: "token_expired", Status: http.StatusUnauthorized, Meaning: "The access token has expired or was revoked; refresh it."},
	{Code: "session_expired", Status: http.StatusUnauthorized, Meaning: "The session has ended; sign in again."},
	{Code: "invalid_refresh_token", Status: http.StatusUnauthorized, Meaning: "The refresh token is unknown, expired or revoked."},
	{Code: "refresh_reused", Status: http.StatusUnauthorized, Meaning: "A refresh token used twice; the session is ended."},
	{Code: "invalid_code", Status: http.StatusUnauthorized, Meaning: "A sign-in code is wrong."},
	{Code: "code_expired", Status: http.StatusUnauthorized, Meaning: "A sign-in code expired, was used, or was tried too often."},
	{Code: "wrong_password", Status: http.StatusUnauthorized, Meaning: "A gallery's password is wrong."},
	{Code: "viewer_token_required", Status: http.StatusUnauthorized, Meaning: "A password-protected gallery needs a viewer token."},
	{Code: "invalid_viewer_token", Status: http.StatusUnauthorized, Meaning: "The viewer token is not one for this gallery, or it has expired."},
	{Code: "forbidden", Status: http.StatusForbidden, Meaning: "The call needs an administrator."},
	{Code: "cross_origin", Status: http.StatusForbidden, Meaning: "A browser request from another origin, which cookies may not carry."},
	{Code: "invalid_signature", Status: http.StatusForbidden, Meaning: "A signed storage URL whose signature does not match."},
	{Code: "url_expired", Status: http.StatusForbidden, Meaning: "A signed storage URL past its expiry."},

	// The resource's state.
	{Code: "not_found", Status: http.StatusNotFound, Meaning: "No such resource, or not the caller's."},
	{Code: "not_attested", Status: http.StatusNotFound, Meaning: "The asset has no attestation."},
	{Code: "queue_not_found", Status: http.StatusNotFound, Meaning: "The queue dashboard has no such queue."},
	{Code: "already_finalized", Status: http.StatusConflict, Meaning: "The asset is finalized; its bytes can no longer change."},
	{Code: "duplicate", Status: http.StatusConflict, Meaning: "A failed asset's bytes were uploaded again as another asset, which is kept; it cannot run again."},
	{Code: "export_finished", Status: http.StatusConflict, Meaning: "Only a queued or running export can be canceled."},
	{Code: "export_not_ready", Status: http.StatusConflict, Meaning: "The export's file can be downloaded once it is done."},
	{Code: "idempotency_key_in_progress", Status: http.StatusConflict, Meaning: "A request with this Idempotency-Key is still running."},
	{Code: "job_not_failed", Status: http.StatusConflict, Meaning: "Only a failed job can be retried or deleted."},
	{Code: "not_processable", Status: http.StatusConflict, Meaning: "The asset has no finalized original to work on."},
	{Code: "project_not_active", Status: http.StatusConflict, Meaning: "The project is archived or deleted and takes no new work."},
	{Code: "slug_taken", Status: http.StatusConflict, Meaning: "Another gallery has this slug."},
	{Code: "selection_limit", Status: http.StatusConflict, Meaning: "The visitor has chosen as many photos as the gallery takes."},
	{Code: "too_many_webhooks", Status: http.StatusConflict, Meaning: "The user has the most webhooks one may have."},
	{Code: "upload_in_progress", Status: http.StatusConflict, Meaning: "Another upload to the same URL is running."},
	{Code: "empty_sidecar", Status: http.StatusBadRequest, Meaning: "An XMP sidecar was sent without bytes."},
	{Code: "sidecar_too_large", Status: http.StatusRequestEntityTooLarge, Meaning: "An XMP sidecar is larger than 1 MiB."},
	{Code: "sidecar_not_found", Status: http.StatusNotFound, Meaning: "The asset has no XMP sidecar."},
	{Code: "export_expired", Status: http.StatusGone, Meaning: "The export's file was deleted when it expired."},
	{Code: "gallery_expired", Status: http.StatusGone, Meaning: "The gallery has expired."},
	{Code: "gallery_comment_limit", Status: http.StatusForbidden, Meaning: "The gallery holds the most comments it takes."},
	{Code: "viewer_comment_limit", Status: http.StatusForbidden, Meaning: "The viewer has written the most comments one may."},

	// Limits: each 429 says when to retry (Retry-After, details.retryAfter).
	{Code: "quota_exceeded", Status: http.StatusForbidden, Meaning: "The account's bytes or exports quota is used up; details name the quota."},
	{Code: "quota_exceeded", Status: http.StatusTooManyRequests, Meaning: "Too many uploads in flight; wait for them to finish or expire."},
	{Code: "rate_limited", Status: http.StatusTooManyRequests, Meaning: "Too many requests, or wrong sign-in codes, in a while."},
	{Code: "too_many_streams", Status: http.StatusTooManyRequests, Meaning: "The most event streams one user may hold open are open."},
	{Code: "busy", Status: http.StatusTooManyRequests, Meaning: "The same work of the caller's is running (a chain verification, password checks)."},
	{Code: "too_many_attempts", Status: http.StatusTooManyRequests, Meaning: "Too many wrong gallery passwords from this address."},
	{Code: "slow_down", Status: http.StatusTooManyRequests, Meaning: "A gallery under a password flood lets each address try in turn."},
	{Code: "gallery_viewer_limit", Status: http.StatusTooManyRequests, Meaning: "The gallery has as many viewers as it takes at once."},

	// The service.
	{Code: "internal", Status: http.StatusInternalServerError, Meaning: "A fault on the server's side; the request id finds it in the logs."},
	{Code: "storage_full", Status: http.StatusInsufficientStorage, Meaning: "The server's storage is full; nothing was kept."},
	{Code: "not_ready", Status: http.StatusServiceUnavailable, Meaning: "A service the server needs does not answer."},
	{Code: "queue_unavailable", Status: http.StatusServiceUnavailable, Meaning: "Redis does not answer; the same call may be retried."},
	{Code: "storage_unavailable", Status: http.StatusServiceUnavailable, Meaning: "Blob storage does not answer; the same call may be retried."},
	{Code: "stream_unavailable", Status: http.StatusServiceUnavailable, Meaning: "Live progress is unavailable; poll instead."},
	{Code: "signin_unavailable", Status: http.StatusServiceUnavailable, Meaning: "Sign-in codes cannot be checked now; keys and sessions still work."},
	{Code: "password_check_unavailable", Status: http.StatusServiceUnavailable, Meaning: "Gallery passwords cannot be checked now."},
}

// errorCode is one row of errorCodes. A code may come with more than one
// status (quota_exceeded): one row each.
type errorCode struct {
	Code    string
	Status  int
	Meaning string
}
