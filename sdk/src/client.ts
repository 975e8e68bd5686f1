// The typed API client: one method per route, JSON in and out, every
// refusal a KiloApiError. The seed's methods keep their names and
// signatures; the methods after "Beyond the seed" reach the rest of the API.
import { backoffDelay, sleep, type BackoffOptions } from "./backoff.js";
import { KiloApiError, parseRetryAfter } from "./errors.js";
import type {
  LoginStartRequest, LoginStartResponse,
  LoginVerifyRequest, LoginVerifyResponse,
  CreateProjectRequest, UpdateProjectRequest,
  Project, Asset, AssetFilesResponse, AssetFaces, Rating,
  PrepareUploadRequest, PrepareUploadResponse,
  FinalizeUploadRequest, FinalizeUploadResponse,
  Cluster, UpdateClusterRequest,
  SetWinnerRequest,
  BulkCullActionRequest, BulkCullActionResponse,
  SuggestCullRequest, CullSuggestion, CullPreferences, SetCullPreferencesRequest,
  EditVersionList, CreateEditVersionRequest, EditVersion,
  ApplyEditBatchRequest, ApplyEditBatchResponse,
  SearchResponse, AdvancedSearchRequest,
  CreateGalleryRequest, Gallery, UpdateGalleryRequest, GalleryFavoritesResponse,
  AddGalleryAssetsRequest, RemoveGalleryAssetsRequest,
  PublicGalleryResponse, PublicGalleryAuthRequest, PublicGalleryAuthResponse,
  PublicFavoriteRequest, PublicFavoriteResponse,
  PublicCommentRequest, PublicCommentResponse,
  CreateExportRequest, Export, ExportDownloadResponse,
  Job, Paged, UUID,
  RefreshRequest, ProjectStats, BatchResponse, StreamToken, RetriedJobs,
} from "./types.js";

export interface KiloClientConfig {
  baseUrl: string; // e.g. "https://api.kilo.photo/v1"
  getAccessToken?: () => string | null;
  defaultHeaders?: Record<string, string>;
  fetchImpl?: typeof fetch;
  /**
   * How many times a request that is safe to send again (GET, PUT, PATCH,
   * DELETE, or a POST with an idempotency key) is retried after a network
   * error, a 408, 429 or 5xx answer (default 3; 0 turns retries off).
   */
  maxRetries?: number;
  /** The waits between retries; a Retry-After from the server wins. */
  backoff?: BackoffOptions;
}

export type RequestOpts = {
  idempotencyKey?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
};

export class KiloClient {
  private baseUrl: string;
  private getAccessToken?: () => string | null;
  private defaultHeaders: Record<string, string>;
  private fetchImpl: typeof fetch;
  private maxRetries: number;
  private backoff: BackoffOptions;

  constructor(cfg: KiloClientConfig) {
    this.baseUrl = cfg.baseUrl.replace(/\/+$/, "");
    this.getAccessToken = cfg.getAccessToken;
    this.defaultHeaders = cfg.defaultHeaders ?? {};
    // Bound, so that a fetch that needs its `this` (browsers') keeps it.
    this.fetchImpl = cfg.fetchImpl ?? ((input, init) => fetch(input, init));
    this.maxRetries = Math.max(0, cfg.maxRetries ?? 3);
    this.backoff = cfg.backoff ?? {};
  }

  private async request<T>(method: string, path: string, body?: unknown, opts?: RequestOpts): Promise<T> {
    const text = await this.exchange(method, path, body === undefined ? undefined : JSON.stringify(body), "application/json", "application/json", opts);
    return (text ? safeJson(text) : undefined) as T;
  }

  // exchange sends body as contentType (none without a body) and answers
  // the 2xx answer's text, retrying what is safe to send again.
  private async exchange(method: string, path: string, body: string | Blob | undefined, contentType: string | undefined,
    accept: string, opts?: RequestOpts): Promise<string> {
    const url = `${this.baseUrl}${path}`;
    const headers: Record<string, string> = {
      ...(contentType ? { "Content-Type": contentType } : {}),
      Accept: accept,
      ...this.defaultHeaders,
      ...(opts?.headers ?? {})
    };

    const token = this.getAccessToken?.();
    if (token) headers["Authorization"] = `Bearer ${token}`;
    if (opts?.idempotencyKey) headers["Idempotency-Key"] = opts.idempotencyKey;
    const again = method !== "POST" || Boolean(opts?.idempotencyKey);

    for (let attempt = 1; ; attempt++) {
      let res: Response;
      try {
        res = await this.fetchImpl(url, {
          method,
          headers,
          body,
          signal: opts?.signal,
        });
      } catch (err) {
        if (opts?.signal?.aborted || !again || attempt > this.maxRetries) throw err;
        await sleep(backoffDelay(attempt, this.backoff), opts?.signal);
        continue;
      }

      const text = await res.text();

      if (!res.ok) {
        const error = new KiloApiError(res.status, text ? safeJson(text) : undefined, parseRetryAfter(res.headers.get("Retry-After")));
        // A 429 that names no wait (details.maxAtOnce) will not pass by waiting.
        const waitable = error.status !== 429 || error.retryAfter !== undefined;
        if (!error.retryable || !waitable || !again || attempt > this.maxRetries) throw error;
        await sleep(backoffDelay(attempt, this.backoff, error.retryAfter), opts?.signal);
        continue;
      }
      return text;
    }
  }

  // AUTH
  loginStart(req: LoginStartRequest): Promise<LoginStartResponse> {
    return this.request("POST", "/auth/login", req);
  }

  loginVerify(req: LoginVerifyRequest): Promise<LoginVerifyResponse> {
    return this.request("POST", "/auth/verify", req);
  }

  // PROJECTS
  listProjects(params?: { cursor?: string; limit?: number }): Promise<Paged<Project>> {
    const q = qs(params);
    return this.request("GET", `/projects${q}`);
  }

  createProject(req: CreateProjectRequest): Promise<Project> {
    return this.request("POST", "/projects", req);
  }

  getProject(projectId: UUID): Promise<Project> {
    return this.request("GET", `/projects/${projectId}`);
  }

  updateProject(projectId: UUID, req: UpdateProjectRequest): Promise<Project> {
    return this.request("PATCH", `/projects/${projectId}`, req);
  }

  archiveProject(projectId: UUID): Promise<Project> {
    return this.request("POST", `/projects/${projectId}/archive`);
  }

  // INGEST
  prepareUpload(projectId: UUID, req: PrepareUploadRequest, opts?: RequestOpts): Promise<PrepareUploadResponse> {
    return this.request("POST", `/projects/${projectId}/assets:prepareUpload`, req, opts);
  }

  finalizeUpload(projectId: UUID, req: FinalizeUploadRequest, opts?: RequestOpts): Promise<FinalizeUploadResponse> {
    return this.request("POST", `/projects/${projectId}/assets:finalizeUpload`, req, opts);
  }

  // ASSETS
  listAssets(projectId: UUID, params?: {
    cursor?: string; limit?: number; picked?: boolean; rejected?: boolean; ratingMin?: number;
    /** Labels separated by commas, "none" for the unlabelled: "red,blue". */
    colorLabel?: string;
    camera?: string; from?: string; to?: string; readiness?: string;
    eyesClosed?: boolean; faceOutOfFocus?: boolean;
    /** "any": favourited by a visitor of any gallery of the project; a gallery's id: of that gallery. */
    clientFavorite?: "any" | UUID;
    sort?: "uploaded" | "capturedAt" | "filename"; order?: "asc" | "desc";
  }): Promise<Paged<Asset>> {
    const q = qs(params);
    return this.request("GET", `/projects/${projectId}/assets${q}`);
  }

  getAsset(assetId: UUID): Promise<Asset> {
    return this.request("GET", `/assets/${assetId}`);
  }

  updateAsset(assetId: UUID, req: Record<string, unknown>): Promise<Asset> {
    return this.request("PATCH", `/assets/${assetId}`, req);
  }

  getAssetFiles(assetId: UUID): Promise<AssetFilesResponse> {
    return this.request("GET", `/assets/${assetId}/files`);
  }

  /** The faces found in an asset's preview, in a project that detects faces. */
  getAssetFaces(assetId: UUID): Promise<AssetFaces> {
    return this.request("GET", `/assets/${assetId}/faces`);
  }

  setRating(assetId: UUID, req: Record<string, unknown>): Promise<Rating> {
    return this.request("POST", `/assets/${assetId}/ratings`, req);
  }

  // CLUSTERS
  listClusters(projectId: UUID, params?: { kind?: string; cursor?: string; limit?: number }): Promise<Paged<Cluster>> {
    const q = qs(params);
    return this.request("GET", `/projects/${projectId}/clusters${q}`);
  }

  getCluster(clusterId: UUID): Promise<Cluster> {
    return this.request("GET", `/clusters/${clusterId}`);
  }

  updateCluster(clusterId: UUID, req: UpdateClusterRequest): Promise<Cluster> {
    return this.request("PATCH", `/clusters/${clusterId}`, req);
  }

  setWinner(clusterId: UUID, req: SetWinnerRequest): Promise<Cluster> {
    return this.request("POST", `/clusters/${clusterId}/winner`, req);
  }

  // CULLING (bulk)
  applyCullActions(projectId: UUID, req: BulkCullActionRequest, opts?: RequestOpts): Promise<BulkCullActionResponse> {
    return this.request("POST", `/projects/${projectId}/cull:applyAction`, req, opts);
  }

  // ASSISTED CULLING (beyond the seed)
  /**
   * What the assistant would reject and pick in a project, changing
   * nothing; its `actions` go to applyCullActions as they are.
   */
  suggestCull(projectId: UUID, req: SuggestCullRequest = {}, opts?: RequestOpts): Promise<CullSuggestion> {
    return this.request("POST", `/projects/${projectId}/cull:suggest`, req, opts);
  }

  /**
   * Judges the project's photos ingested before the assistant's signals
   * existed, from their previews (a project:signals run); a suggestion's
   * `counts.unjudged` falls to 0 as it goes.
   */
  judgeProject(projectId: UUID, opts?: RequestOpts): Promise<{ queuedJobs: UUID[] }> {
    return this.request("POST", `/projects/${projectId}/assets:judge`, undefined, opts);
  }

  /** The caller's strictness, learned from their hand decisions in all their projects. */
  getCullPreferences(): Promise<CullPreferences> {
    return this.request("GET", "/cull/preferences");
  }

  /** Sets the caller's base strictness; the criteria left out take the default. */
  setCullPreferences(req: SetCullPreferencesRequest): Promise<CullPreferences> {
    return this.request("PUT", "/cull/preferences", req);
  }

  /** Back to the defaults, forgetting what the caller's decisions taught so far. */
  resetCullPreferences(): Promise<CullPreferences> {
    return this.request("DELETE", "/cull/preferences");
  }

  // EDITS
  listEdits(assetId: UUID): Promise<EditVersionList> {
    return this.request("GET", `/assets/${assetId}/edits`);
  }

  createEdit(assetId: UUID, req: CreateEditVersionRequest): Promise<EditVersion> {
    return this.request("POST", `/assets/${assetId}/edits`, req);
  }

  getEdit(editId: UUID): Promise<EditVersion> {
    return this.request("GET", `/edits/${editId}`);
  }

  applyEditBatch(editId: UUID, req: ApplyEditBatchRequest, opts?: RequestOpts): Promise<ApplyEditBatchResponse> {
    return this.request("POST", `/edits/${editId}/applyTo`, req, opts);
  }

  // SEARCH
  search(projectId: UUID, qText: string, limit?: number): Promise<SearchResponse> {
    const q = qs({ q: qText, limit });
    return this.request("GET", `/projects/${projectId}/search${q}`);
  }

  advancedSearch(projectId: UUID, req: AdvancedSearchRequest): Promise<SearchResponse> {
    return this.request("POST", `/projects/${projectId}/search`, req);
  }

  // GALLERIES (owner/admin)
  createGallery(projectId: UUID, req: CreateGalleryRequest, opts?: RequestOpts): Promise<Gallery> {
    return this.request("POST", `/projects/${projectId}/galleries`, req, opts);
  }

  getGallery(galleryId: UUID): Promise<Gallery> {
    return this.request("GET", `/galleries/${galleryId}`);
  }

  updateGallery(galleryId: UUID, req: UpdateGalleryRequest): Promise<Gallery> {
    return this.request("PATCH", `/galleries/${galleryId}`, req);
  }

  addGalleryAssets(galleryId: UUID, req: AddGalleryAssetsRequest, opts?: RequestOpts): Promise<Gallery> {
    return this.request("POST", `/galleries/${galleryId}/assets`, req, opts);
  }

  removeGalleryAssets(galleryId: UUID, req: RemoveGalleryAssetsRequest): Promise<Gallery> {
    return this.request("DELETE", `/galleries/${galleryId}/assets`, req);
  }

  /** Who chose what in a gallery, by the names its visitors gave. */
  galleryFavorites(galleryId: UUID): Promise<GalleryFavoritesResponse> {
    return this.request("GET", `/galleries/${galleryId}/favorites`);
  }

  // PUBLIC SHARE (client)
  publicGetGallery(shareSlug: string): Promise<PublicGalleryResponse> {
    return this.request("GET", `/share/${encodeURIComponent(shareSlug)}`);
  }

  publicAuthGallery(shareSlug: string, req: PublicGalleryAuthRequest): Promise<PublicGalleryAuthResponse> {
    return this.request("POST", `/share/${encodeURIComponent(shareSlug)}/auth`, req);
  }

  publicFavorite(shareSlug: string, req: PublicFavoriteRequest): Promise<PublicFavoriteResponse> {
    return this.request("POST", `/share/${encodeURIComponent(shareSlug)}/favorite`, req);
  }

  publicComment(shareSlug: string, req: PublicCommentRequest): Promise<PublicCommentResponse> {
    return this.request("POST", `/share/${encodeURIComponent(shareSlug)}/comment`, req);
  }

  // EXPORTS
  createExport(projectId: UUID, req: CreateExportRequest, opts?: RequestOpts): Promise<Export> {
    return this.request("POST", `/projects/${projectId}/exports`, req, opts);
  }

  getExport(exportId: UUID): Promise<Export> {
    return this.request("GET", `/exports/${exportId}`);
  }

  exportDownload(exportId: UUID): Promise<ExportDownloadResponse> {
    return this.request("GET", `/exports/${exportId}/download`);
  }

  // JOBS
  listJobs(projectId: UUID, params?: { status?: string; type?: string; cursor?: string; limit?: number }): Promise<Paged<Job>> {
    const q = qs(params);
    return this.request("GET", `/projects/${projectId}/jobs${q}`);
  }

  // Beyond the seed.

  /** A new token pair for a refresh token (each refresh token works once). */
  refreshTokens(req: RefreshRequest): Promise<LoginVerifyResponse> {
    return this.request("POST", "/auth/refresh", req);
  }

  /** The project's assets counted by stage. */
  getProjectStats(projectId: UUID): Promise<ProjectStats> {
    return this.request("GET", `/projects/${projectId}/stats`);
  }

  /** A batch and its jobs. */
  getBatch(batchId: UUID): Promise<BatchResponse> {
    return this.request("GET", `/batches/${batchId}`);
  }

  cancelBatch(batchId: UUID, opts?: RequestOpts): Promise<unknown> {
    return this.request("POST", `/batches/${batchId}/cancel`, undefined, opts);
  }

  retryBatch(batchId: UUID, opts?: RequestOpts): Promise<RetriedJobs> {
    return this.request("POST", `/batches/${batchId}/retry`, undefined, opts);
  }

  /** A short-lived token that opens event streams (`?accessToken=`), for EventSource. */
  createStreamToken(opts?: RequestOpts): Promise<StreamToken> {
    return this.request("POST", "/realtime/tokens", undefined, opts);
  }

  deleteAsset(assetId: UUID): Promise<void> {
    return this.request("DELETE", `/assets/${assetId}`);
  }

  /**
   * Puts an asset's XMP sidecar (NAME.xmp or NAME.EXT.xmp, at most 1 MiB)
   * and applies its decisions: stars, flag and label become the owner's
   * rating unless the owner rated the photo by hand; keywords and IPTC
   * captions fill what the asset lacks. A packet the server refuses
   * answers `applied: false` with why in `warnings`.
   */
  async putSidecar(assetId: UUID, xmp: string | Blob, opts?: RequestOpts): Promise<PutSidecarResponse> {
    const text = await this.exchange("PUT", `/assets/${assetId}/sidecar`, xmp, "application/rdf+xml", "application/json", opts);
    return safeJson(text) as PutSidecarResponse;
  }

  /** The asset's XMP sidecar as it was put; a KiloApiError `sidecar_not_found` when it has none. */
  getSidecar(assetId: UUID, opts?: RequestOpts): Promise<string> {
    return this.exchange("GET", `/assets/${assetId}/sidecar`, undefined, undefined, "application/rdf+xml, application/json", opts);
  }

  /**
   * stream opens a long-lived GET (an event stream) with the client's
   * credentials, returning the answer unread; a refusal is a KiloApiError.
   */
  async stream(path: string, init: { headers?: Record<string, string>; signal?: AbortSignal } = {}): Promise<Response> {
    const headers: Record<string, string> = { Accept: "text/event-stream", ...this.defaultHeaders, ...(init.headers ?? {}) };
    const token = this.getAccessToken?.();
    if (token && !path.includes("accessToken=")) headers["Authorization"] = `Bearer ${token}`;
    const res = await this.fetchImpl(this.endpoint(path), { method: "GET", headers, signal: init.signal });
    if (!res.ok) {
      const text = await res.text();
      throw new KiloApiError(res.status, text ? safeJson(text) : undefined, parseRetryAfter(res.headers.get("Retry-After")));
    }
    return res;
  }

  /** endpoint is the absolute URL of an API path such as "/realtime". */
  endpoint(path: string): string {
    return `${this.baseUrl}${path}`;
  }
}

// helpers
function safeJson(text: string): any {
  try { return JSON.parse(text); } catch { return undefined; }
}

function qs(params?: Record<string, any>): string {
  if (!params) return "";
  const clean: Record<string, string> = {};
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null) continue;
    clean[k] = String(v);
  }
  const s = new URLSearchParams(clean).toString();
  return s ? `?${s}` : "";
}

/** What an XMP sidecar says of its photo (PUT /v1/assets/{id}/sidecar). */
export interface SidecarDecisions {
  /** 1–5 stars, or 0 for none. */
  rating: number;
  rejected: boolean;
  picked: boolean;
  colorLabel: "" | "red" | "yellow" | "green" | "blue" | "purple";
  keywords: string[];
  /** The IPTC core captions, named as Asset.iptc names them. */
  iptc: Record<string, string>;
}

/** The answer of PUT /v1/assets/{id}/sidecar. */
export interface PutSidecarResponse {
  assetId: UUID;
  /** As read; all zero when the packet was refused. */
  decisions: SidecarDecisions;
  /** False when the packet was refused: nothing of it was kept. */
  applied: boolean;
  /** The owner had rated the photo by hand, so its stars, flag and label stayed. */
  handDecisionKept: boolean;
  warnings: string[];
}
