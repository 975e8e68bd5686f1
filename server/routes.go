package server

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// routes is the whole route table, to be read at a glance.
func (s *Server) routes() *gin.Engine {
	r := gin.New()
	r.HandleMethodNotAllowed = true
	// Only TRUSTED_PROXIES may name the client in X-Forwarded-For; by
	// default the client is the peer. The configuration checked each entry.
	if err := r.SetTrustedProxies(s.cfg.TrustedProxies); err != nil {
		panic(err)
	}
	r.Use(s.withRequestID, s.measure, s.accessLog, s.recoverPanics, s.cors, s.idleBody)
	r.NoRoute(func(c *gin.Context) { fail(c, errNoRoute()) })
	r.NoMethod(func(c *gin.Context) {
		fail(c, apiError(http.StatusMethodNotAllowed, "method_not_allowed", "This route does not take %s.", c.Request.Method))
	})

	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.perAddress("readyz", s.limits.readyz), s.readyz)
	r.GET("/metrics", s.metricsAccess, s.serveMetrics)
	if s.verifier != nil { // the blob backend's URLs lead here
		r.PUT("/blobs/*key", blobHeaders, s.putBlob) // authorized by the URL's signature
		r.GET("/blobs/*key", blobHeaders, s.getBlob)
	}

	v1 := r.Group("/v1", textPath, s.limitBody)
	v1.GET("/openapi.json", s.openAPI) // openapi.yaml: every route here, described
	// Signing in needs no key, so its budget is per client address.
	signIn := s.perAddress("signin-ip", s.limits.signIn)
	v1.POST("/session", signIn, s.createSession)
	v1.POST("/auth/login", signIn, s.login)
	v1.POST("/auth/verify", signIn, s.verify)
	v1.POST("/auth/refresh", signIn, s.refresh)

	// Client galleries: no key; a viewer token for password-protected ones (share.go).
	share := v1.Group("/share/:slug", s.loadShare)
	share.GET("", s.getShare)
	share.POST("/auth", s.shareAuth)
	share.POST("/favorite", s.shareFavorite)
	share.POST("/comment", s.shareComment)

	// Streams also take a short-lived token in the query: EventSource cannot send headers.
	streams := v1.Group("", s.authenticateStream, s.rateLimit)
	streams.GET("/realtime", s.realtime)
	streams.GET("/batches/:id/events", s.batchEvents)

	// Every POST from here on takes an Idempotency-Key (s.idempotent), as
	// the contract says; the routes above have no account to keep it under.
	api := v1.Group("", s.authenticate, s.rateLimit)
	api.GET("/session", s.getSession)
	api.POST("/realtime/tokens", s.idempotent, s.createStreamToken)
	api.DELETE("/session", s.deleteSession)

	api.GET("/projects", s.listProjects)
	api.POST("/projects", s.idempotent, s.createProject)
	api.GET("/projects/:id", s.getProject)
	api.PATCH("/projects/:id", s.patchProject)
	api.POST("/projects/:id/archive", s.idempotent, s.archiveProject)

	// Actions: POST on a path ending ":verb" (actions.go).
	act := s.actions(api, s.idempotent)
	act.POST("/projects/:id/assets:prepareUpload", s.prepareUpload)
	act.POST("/projects/:id/assets:finalizeUpload", s.finalizeUpload)
	act.POST("/projects/:id/assets:import", s.importURLs)
	api.GET("/projects/:id/assets", s.listAssets)
	api.GET("/projects/:id/jobs", s.listJobs)
	api.GET("/projects/:id/clusters", s.listClusters)
	act.POST("/projects/:id/cull:applyAction", s.applyCullActions)
	act.POST("/projects/:id/cull:suggest", s.suggestCull) // assist.go
	act.POST("/projects/:id/assets:judge", s.judgeProject)
	api.GET("/projects/:id/search", s.search)
	api.POST("/projects/:id/search", s.idempotent, s.searchFiltered)
	api.GET("/projects/:id/stats", s.stats)
	api.GET("/clusters/:id", s.getCluster)
	api.PATCH("/clusters/:id", s.patchCluster)
	api.POST("/clusters/:id/winner", s.idempotent, s.chooseClusterWinner)

	api.GET("/cull/preferences", s.getCullPreferences)
	api.PUT("/cull/preferences", s.putCullPreferences)
	api.DELETE("/cull/preferences", s.deleteCullPreferences)

	api.GET("/chain/head", s.chainHead)
	api.GET("/chain/verify", s.chainVerify)
	api.GET("/chain/publicKey", s.chainPublicKey)

	api.GET("/batches/:id", s.getBatch)
	api.GET("/batches/:id/results", s.batchResults)
	api.POST("/batches/:id/cancel", s.idempotent, s.cancelBatch)
	api.POST("/batches/:id/retry", s.idempotent, s.retryBatch)
	api.POST("/batches/:id/jobs/:jobId/retry", s.idempotent, s.retryJob)

	api.GET("/assets/:id", s.getAsset)
	api.PATCH("/assets/:id", s.patchAsset)
	api.DELETE("/assets/:id", s.deleteAsset)
	api.POST("/assets/:id/ratings", s.idempotent, s.rateAsset)
	api.GET("/assets/:id/edits", s.listEdits)
	api.POST("/assets/:id/edits", s.idempotent, s.createEdit)
	api.GET("/edits/:id", s.getEdit)
	api.POST("/edits/:id/applyTo", s.idempotent, s.applyEditTo)
	act.POST("/assets/:id:reprocess", s.reprocess)
	api.GET("/assets/:id/files", s.assetFiles)
	api.GET("/assets/:id/faces", s.assetFaces)
	api.GET("/assets/:id/similar", s.similar)
	api.GET("/assets/:id/attestation", s.assetAttestation)
	s.routeSidecars(api)

	api.POST("/projects/:id/exports", s.idempotent, s.createExport)
	api.GET("/exports/:id", s.getExport)
	api.GET("/exports/:id/download", s.exportDownload)
	api.POST("/exports/:id/cancel", s.idempotent, s.cancelExport)

	api.GET("/projects/:id/galleries", s.listGalleries)
	api.POST("/projects/:id/galleries", s.idempotent, s.createGallery)
	api.GET("/galleries/:id", s.getGallery)
	api.PATCH("/galleries/:id", s.patchGallery)
	api.DELETE("/galleries/:id", s.deleteGallery)
	api.POST("/galleries/:id/assets", s.idempotent, s.addGalleryAssets)
	api.DELETE("/galleries/:id/assets", s.removeGalleryAssets)
	api.GET("/galleries/:id/comments", s.galleryComments)
	api.GET("/galleries/:id/favorites", s.galleryFavorites)

	api.GET("/webhooks", s.listWebhooks)
	api.POST("/webhooks", s.idempotent, s.createWebhook)
	api.GET("/webhooks/:id", s.getWebhook)
	api.DELETE("/webhooks/:id", s.deleteWebhook)
	api.POST("/webhooks/:id/test", s.idempotent, s.testWebhook)
	api.GET("/webhooks/:id/deliveries", s.listDeliveries)

	// The web pages (public HTML: their API calls need the session), the
	// operators' API and Asynqmon (admins only). See web.go and admin.go.
	r.GET("/", s.appPage)
	r.GET("/admin", s.adminPage)
	r.GET("/s/:slug", s.sharePage)
	r.GET("/static/*path", s.staticFile)
	r.Any("/admin/queues/*path", s.adminOnlyPage, s.asynqmon())
	api.GET("/assets/:id/jobs", s.assetJobs)
	admin := api.Group("/admin", requireAdmin)
	admin.GET("/queues", s.adminQueues)
	admin.POST("/queues/:queue/pause", s.idempotent, s.pauseQueue)
	admin.POST("/queues/:queue/resume", s.idempotent, s.resumeQueue)
	admin.GET("/jobs", s.adminJobs)
	admin.POST("/jobs/:id/retry", s.idempotent, s.adminRetryJob)
	admin.DELETE("/jobs/:id", s.adminDeleteJob)
	admin.GET("/batches", s.adminBatches)
	admin.POST("/batches/:id/retry", s.idempotent, s.adminRetryBatch)
	admin.GET("/chain", s.adminChain)
	admin.POST("/chain/verify", s.idempotent, s.adminVerifyChain)
	admin.POST("/chain/requeue", s.idempotent, s.adminRequeueChain)
	admin.GET("/backups", s.adminBackups)

	return r
}
