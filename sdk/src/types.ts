// The shapes of the Lightbox API as the KILO app reads and sends them.
//
// The seed's types keep their names and fields exactly; fields the server
// also answers are added after a "Beyond the seed" comment in each type.
// test/contract.test.mjs checks every type here against server/openapi.yaml
// both ways.

export type UUID = string;

export type ISODateTime = string; // "2026-01-14T12:34:56Z"
export type ISODate = string;     // "2026-01-14"

export type Cursor = string;

export interface ApiError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
  requestId?: string;
}

export interface PageInfo {
  nextCursor?: Cursor | null;
}

export interface User {
  id: UUID;
  email: string;
  displayName: string;
  createdAt: ISODateTime;

  // Beyond the seed.
  isAdmin: boolean;
}

export type ProjectStatus = "active" | "archived" | "deleted";

export interface Project {
  id: UUID;
  studioId?: UUID | null;
  ownerUserId: UUID;
  title: string;
  description?: string | null;
  shootDate?: ISODate | null;
  timezone?: string | null;
  status: ProjectStatus;
  /** Faces are looked for in its photos (detection only; off by default). */
  detectFaces?: boolean;
  stats?: Record<string, unknown>;
  createdAt: ISODateTime;
  updatedAt: ISODateTime;
}

export interface Paged<T> {
  items: T[];
  pageInfo: PageInfo;
}

export interface CreateProjectRequest {
  title: string;
  description?: string;
  shootDate?: ISODate;
  timezone?: string;
}

export interface UpdateProjectRequest {
  title?: string;
  description?: string | null;
  shootDate?: ISODate | null;
  timezone?: string | null;
  status?: ProjectStatus;
  /** Switching it off deletes the faces found in the project. */
  detectFaces?: boolean;
}

export interface LoginStartRequest {
  email: string;
  locale?: string;
}

export interface LoginStartResponse {
  challengeId: string;
  delivery: "email_code" | "magic_link";
}

export interface LoginVerifyRequest {
  challengeId: string;
  code: string;
}

export interface LoginVerifyResponse {
  accessToken: string;
  refreshToken: string;
  user: User;

  // Beyond the seed.
  /** When the access token ends (an hour after it was made). */
  expiresAt: ISODateTime;
}

// Assets
export interface Rating {
  assetId: UUID;
  userId: UUID;
  rating?: number | null;   // 1-5
  picked?: boolean | null;
  rejected?: boolean | null;
  starred?: boolean | null;
  notes?: string | null;
  updatedAt?: ISODateTime | null;

  // Beyond the seed.
  colorLabel?: ColorLabel | null;
  /** The flag, stars and label are the culling assistant's, not a decision by hand. */
  assisted?: boolean;
}

/** Beyond the seed: a colour label, as Lightroom's keys 6 to 9 set the first four. */
export type ColorLabel = "red" | "yellow" | "green" | "blue" | "purple";

export interface Asset {
  id: UUID;
  projectId: UUID;
  capturedAt?: ISODateTime | null;
  ingestedAt: ISODateTime;

  widthPx?: number | null;
  heightPx?: number | null;

  cameraMake?: string | null;
  cameraModel?: string | null;
  lensModel?: string | null;

  focalLengthMm?: number | null;
  shutterSpeed?: string | null;
  aperture?: number | null;
  iso?: number | null;

  exif?: Record<string, unknown>;
  iptc?: Record<string, unknown>;

  flags?: Record<string, unknown>;
  myRating?: Rating;

  bestPreviewUrl?: string | null;

  // Beyond the seed.
  /**
   * The other half of a RAW+JPEG pair (one base name and capture time):
   * one photo to cull, a decision on either is made on both.
   */
  pairAssetId?: string | null;
  filename: string;
  contentType: string;
  byteSize: number;
  checksumSha256: string | null;
  /** The UTC offset the camera recorded, such as "+02:00". */
  capturedOffset: string | null;
  gps: { lat: number; lon: number } | null;
  /**
   * Quality signals: sharpness, clipped highlights and shadows, mean
   * luminance; `reasons` (CullReason[]), why the culling assistant warns of
   * the photo at the default strictness, and `warnings` (their codes).
   */
  quality: Record<string, unknown> | null;
  keywords: string[];
  notes: string;
  /** In a project that detects faces; null until they were looked for. */
  faces?: FaceSummary | null;
  createdAt: ISODateTime;
  updatedAt: ISODateTime;
}

export interface FaceSummary {
  count: number;
  /** Faces with an eye read closed. */
  eyesClosed: number;
  /** Faces whose sharpness is under 24. */
  outOfFocus: number;
  /** The softest face's sharpness; null without faces. */
  minFaceSharpness: number | null;
}

export interface Face {
  /** Fractions of the preview's width and height, from its top left corner. */
  box: { x: number; y: number; w: number; h: number };
  score: number;
  /** Per eye, the person's own left and right: about 0.25–0.45 open, under 0.16 closed. */
  eyeOpenness: { left: number; right: number } | null;
  /** Degrees; 0 looking at the camera. */
  headAngles: { yaw: number; pitch: number; roll: number } | null;
  landmarks: Record<string, unknown> | null;
  /** 0–100, how crisp the face's edges are whatever their contrast; under 24 is out of focus. */
  sharpness: number;
  /** An eye reads closed (openness under 0.16). */
  eyesClosed: boolean;
  outOfFocus: boolean;
}

export interface AssetFaces {
  assetId: UUID;
  status: "off" | "pending" | "done";
  model: string | null;
  widthPx: number | null;
  heightPx: number | null;
  summary: FaceSummary | null;
  faces: Face[];
  detectedAt: ISODateTime | null;
}

export interface UpdateAssetRequest {
  iptc?: Record<string, unknown>;
  keywords?: string[];
  notes?: string | null;
  flags?: Record<string, unknown>;
}

export type AssetFileKind = "original" | "thumbnail" | "preview" | "export"
  // Beyond the seed: an applied edit's renders, and the XMP sidecar put
  // with PUT /v1/assets/{id}/sidecar.
  | "edit_preview" | "edit_thumbnail" | "xmp_sidecar";

export interface AssetFile {
  kind: AssetFileKind;
  url: string;
  contentType?: string | null;
  byteSize?: number | null;
  checksumSha256?: string | null;
  expiresAt?: ISODateTime | null;

  // Beyond the seed.
  widthPx: number | null;
  heightPx: number | null;
}

export interface AssetFilesResponse {
  files: AssetFile[];
}

export interface UpsertRatingRequest {
  rating?: number | null; // 1-5
  picked?: boolean | null;
  rejected?: boolean | null;
  starred?: boolean | null;
  notes?: string | null;

  // Beyond the seed: null clears it.
  colorLabel?: ColorLabel | null;
}

// Upload
export interface UploadFileDescriptor {
  clientFileId?: string | null;
  filename: string;
  byteSize: number;
  contentType?: string | null;
  capturedAt?: ISODateTime | null;
}

export interface PrepareUploadRequest {
  files: UploadFileDescriptor[];
}

export interface UploadInstruction {
  clientFileId?: string | null;
  assetId: UUID;
  uploadUrl: string;
  headers?: Record<string, string>;
  expiresAt?: ISODateTime | null;
}

export interface PrepareUploadResponse {
  uploads: UploadInstruction[];
}

export interface FinalizeUploadRequest {
  assets: Array<{
    assetId: UUID;
    checksumSha256: string;
    contentType?: string | null;
  }>;
}

export interface FinalizeUploadResponse {
  queuedJobs: UUID[];

  // Beyond the seed.
  /** The batch that follows the accepted files; null when none was accepted. */
  batchId: UUID | null;
  assets: FinalizedAsset[];
}

// Clusters
export type ClusterKind = "moment" | "burst" | "duplicate_group";

export interface ClusterAsset {
  assetId: UUID;
  rank: number; // 1..N
  role?: "candidate" | "winner" | "alt" | null;
  signals?: Record<string, unknown>;
}

export interface Cluster {
  id: UUID;
  projectId: UUID;
  kind: ClusterKind;
  title?: string | null;
  startTime?: ISODateTime | null;
  endTime?: ISODateTime | null;
  score?: number | null;
  reviewed?: boolean | null;
  winnerAssetId?: UUID | null;
  whyWinner?: string[];
  assets: ClusterAsset[];

  // Beyond the seed.
  /** The app's own record of a person's changes, kept as sent. */
  manualOverrides: Record<string, unknown> | null;
}

export interface UpdateClusterRequest {
  title?: string | null;
  reviewed?: boolean | null;
  manualOverrides?: Record<string, unknown>;
}

export interface SetWinnerRequest {
  winnerAssetId: UUID;
}

// Bulk cull
export interface BulkCullActionRequest {
  actions: Array<{
    assetId: UUID;
    picked?: boolean | null;
    rejected?: boolean | null;
    rating?: number | null;  // 1-5
    starred?: boolean | null;

    // Beyond the seed: null clears it.
    colorLabel?: ColorLabel | null;
    /** The assistant's suggestion (as cull:suggest hands it out): never overrides a hand decision. */
    assisted?: boolean;
  }>;
}

export interface BulkCullActionResponse {
  ok: boolean;
  updatedAssetIds?: UUID[];
  /** Beyond the seed: the photos whose assisted actions were skipped, as they hold a decision made by hand. */
  leftAloneAssetIds: UUID[];
}

// Assisted culling (beyond the seed)

/** A criterion the culling assistant judges by. */
export type CullCriterion = "blurry" | "motionBlur" | "exposure" | "misfire" | "eyesClosed" | "faceSoft";

/** How a suggestion's actions mark: rejected/picked, rating 1/5, or colorLabel red/green. */
export type CullMark = "flags" | "stars" | "labels";

/** Each criterion's strictness, 0 (lenient) to 1 (strict); null is off. */
export interface CullStrictness {
  blurry: number | null;
  motionBlur: number | null;
  exposure: number | null;
  misfire: number | null;
  eyesClosed: number | null;
  faceSoft: number | null;
}

/** Criteria to set, each a number 0–1, or "off" (or null) to turn it off. */
export interface CullStrictnessInput {
  blurry?: number | "off" | null;
  motionBlur?: number | "off" | null;
  exposure?: number | "off" | null;
  misfire?: number | "off" | null;
  eyesClosed?: number | "off" | null;
  faceSoft?: number | "off" | null;
}

/** A judgement in words: a warning code (or best_of_group, not_best_of_group) and what it read. */
export interface CullReason {
  code: string;
  message: string;
}

export interface CullVerdict {
  assetId: UUID;
  /** The keeper score, 0–100. */
  score: number;
  reasons: CullReason[];
}

/** A change for applyCullActions, as the assistant's. */
export interface CullAction {
  assetId: UUID;
  assisted: true;
  picked?: boolean;
  rejected?: boolean;
  rating?: 1 | 5 | null;
  colorLabel?: "red" | "green" | null;
}

export interface SuggestCullRequest {
  /** The criteria to set for this suggestion; the others take the caller's learned strictness. */
  strictness?: CullStrictnessInput;
  /** Pick the best this many (0–10) of each burst or duplicate group and reject the rest; 0 picks nothing. */
  keepPerGroup?: number;
  mark?: CullMark;
}

export interface CullCounts {
  photos: number;
  rejects: number;
  picks: number;
  /** Photos decided by hand, which the suggestion leaves alone. */
  leftAlone: number;
  /** Photos without signals yet (ingested before them). */
  unjudged: number;
  /** Photos warned of, by warning code, hand-decided ones included. */
  buckets: Record<string, number>;
}

export interface CullSuggestion {
  rejects: CullVerdict[];
  picks: CullVerdict[];
  counts: CullCounts;
  /** The strictness the suggestion was made under. */
  strictness: CullStrictness;
  /** Ready for applyCullActions: the marks not in place yet, and the assistant's own earlier marks it no longer suggests, cleared. */
  actions: CullAction[];
}

/** One criterion's strictness moved by what the caller decided by hand. */
export interface CullAdjustment {
  criterion: CullCriterion;
  from: number;
  to: number;
  /** Photos the criterion warned of that were picked by hand. */
  kept: number;
  /** Photos rejected by hand that it let through. */
  rejected: number;
  message: string;
}

export interface CullPreferences {
  /** The base moved by what the caller decided by hand. */
  strictness: CullStrictness;
  /** As the caller set it, the defaults (0.5) where they did not. */
  base: CullStrictness;
  adjustments: CullAdjustment[];
  /** Since when hand decisions teach; null: all of them. */
  learnSince: ISODateTime | null;
}

export interface SetCullPreferencesRequest {
  strictness: CullStrictnessInput;
}

// Edits
export interface EditVersion {
  id: UUID;
  assetId: UUID;
  userId: UUID;
  parentId?: UUID | null;
  name?: string | null;
  params: Record<string, unknown>;
  createdAt: ISODateTime;

  // Beyond the seed.
  /** When its render was stored as the asset's edit_preview. */
  appliedAt: ISODateTime | null;
  jobId?: UUID;
}

export interface EditVersionList {
  items: EditVersion[];
}

export interface CreateEditVersionRequest {
  name?: string | null;
  parentId?: UUID | null;
  params: Record<string, unknown>;
}

export interface ApplyEditBatchRequest {
  assetIds: UUID[];
  mode?: "create_versions" | "overwrite_latest";
  name?: string | null;
}

export interface ApplyEditBatchResponse {
  jobId: UUID;
  status: "queued" | "running" | "done";

  // Beyond the seed.
  batchId: UUID;
}

// Search
export interface SearchResponse {
  results: Array<{
    assetId: UUID;
    score: number;
    highlights?: string[];
  }>;
  tookMs?: number;
}

export interface AdvancedSearchRequest {
  q: string;
  filters?: Record<string, unknown>;
}

/** Beyond the seed: the filters AdvancedSearchRequest takes, the rating ones the caller's. */
export interface SearchFilters {
  picked?: boolean;
  rejected?: boolean;
  ratingMin?: number;
  /** Any of these labels; "none" for the photos without one. */
  colorLabel?: Array<ColorLabel | "none">;
  /** "any": favourited by a visitor of any gallery of the project; a gallery's id: of that gallery. */
  clientFavorite?: "any" | UUID;
  camera?: string;
  from?: ISODateTime;
  to?: ISODateTime;
  readiness?: Array<"cull" | "search" | "ai">;
  eyesClosed?: boolean;
  faceOutOfFocus?: boolean;
}

// Galleries
export interface Gallery {
  id: UUID;
  projectId: UUID;
  title: string;
  shareSlug: string;
  expiresAt?: ISODateTime | null;
  watermark: boolean;
  allowDownloads: boolean;
  requiresPassword: boolean;
  assetCount: number;
  createdAt: ISODateTime;

  // Beyond the seed.
  /** The page clients open, /s/{shareSlug}. */
  shareUrl: string;
  updatedAt: ISODateTime;
  /** The batch of watermark renders this change started. */
  renderBatchId?: UUID;
  /** The text drawn on watermarked previews; null draws the title. */
  watermarkText: string | null;
  /** Where the watermark goes. */
  watermarkPosition: WatermarkPosition;
  /** The opacity of the watermark's ink, 0.05 to 1. */
  watermarkOpacity: number;
  /** Clients see each photo's file name; otherwise the page numbers them. */
  showFileNames: boolean;
  /** Favourites its viewers marked, all photos together. */
  favoriteCount: number;
  /** Comments its viewers left, all photos together. */
  commentsCount: number;
  /** How many photos one visitor may choose; null for no limit. */
  selectionLimit: number | null;
}

export interface CreateGalleryRequest {
  title: string;
  assetIds: UUID[];
  password?: string | null;
  expiresAt?: ISODateTime | null;
  watermark?: boolean;
  allowDownloads?: boolean;
  /** Beyond the seed: the text drawn on watermarked previews (1 to 100 characters); null draws the title. */
  watermarkText?: string | null;
  /** Beyond the seed: how many photos one visitor may choose (1 to 10,000); null for no limit. */
  selectionLimit?: number | null;
  /** Beyond the seed: show clients each photo's file name (default false). */
  showFileNames?: boolean;
  /** Beyond the seed: where the watermark goes (default "corner"). */
  watermarkPosition?: WatermarkPosition;
  /** Beyond the seed: the watermark's opacity, 0.05 to 1 (default 0.3). */
  watermarkOpacity?: number;
}

export interface UpdateGalleryRequest {
  title?: string;
  password?: string | null;
  expiresAt?: ISODateTime | null;
  watermark?: boolean;
  allowDownloads?: boolean;
  /** Beyond the seed: a change draws every watermarked preview again. */
  watermarkText?: string | null;
  /** Beyond the seed: how many photos one visitor may choose; null for no limit. */
  selectionLimit?: number | null;
  /** Beyond the seed: show clients each photo's file name. */
  showFileNames?: boolean;
  /** Beyond the seed: a change draws every watermarked preview again. */
  watermarkPosition?: WatermarkPosition;
  /** Beyond the seed: 0.05 to 1; a change draws every watermarked preview again. */
  watermarkOpacity?: number;
}

/** Where a gallery's watermark goes: small in the bottom right corner, or larger across the middle. */
export type WatermarkPosition = "corner" | "center";

/** Who chose what in a gallery (GET /galleries/{id}/favorites). */
export interface GalleryFavoritesResponse {
  visitors: Array<{
    /** The name the visitor gave; null for an anonymous viewer. */
    name: string | null;
    email: string | null;
    assetIds: UUID[];
    fileNames: string[];
  }>;
}

/** Who a viewer token's holder said they are. */
export interface GalleryVisitor {
  name: string;
  email: string | null;
}

export interface AddGalleryAssetsRequest {
  assetIds: UUID[];
}
export interface RemoveGalleryAssetsRequest {
  assetIds: UUID[];
}

export interface PublicGalleryResponse {
  title: string;
  requiresAuth: boolean;
  token?: string | null;
  assets?: Array<{
    assetId: UUID;
    previewUrl: string;
    favoriteCount?: number | null;
    commentsCount?: number | null;
    // Beyond the seed.
    /** A watermarked preview is still being made (previewUrl shows a placeholder). */
    pending: boolean;
    /** This viewer's favourite. */
    favorited: boolean;
    /** With allowDownloads. */
    originalUrl?: string;
    /** With showFileNames. */
    fileName?: string;
    /** The preview's size in pixels, to lay photos out in their own shape; null until it is made. */
    width: number | null;
    height: number | null;
  }>;

  // Beyond the seed.
  expiresAt: ISODateTime | null;
  allowDownloads: boolean;
  /** Each photo comes with its fileName. */
  showFileNames: boolean;
  /** How many photos one visitor may choose; null for no limit. */
  selectionLimit: number | null;
  /** How many this viewer's visitor has chosen. */
  chosen: number;
  /** Who this viewer token's holder said they are; null when anonymous. */
  visitor: GalleryVisitor | null;
}

export interface PublicGalleryAuthRequest {
  password: string;
  /**
   * Beyond the seed: who is choosing, given once per gallery; their
   * favourites are theirs, and the token lasts 30 days.
   */
  name?: string;
  /** Beyond the seed: optional, with a name. */
  email?: string;
}

export interface PublicGalleryAuthResponse {
  token: string;

  // Beyond the seed.
  expiresAt: ISODateTime;
  visitor?: GalleryVisitor | null;
}

export interface PublicFavoriteRequest {
  assetId: UUID;
  favorite: boolean;
}

export interface PublicFavoriteResponse {
  ok: boolean;

  // Beyond the seed.
  assetId: UUID;
  favorite: boolean;
  /** Visitors who chose the photo. */
  favoriteCount: number;
  /** Photos this viewer's visitor has chosen. */
  chosen: number;
}

export interface PublicCommentRequest {
  assetId: UUID;
  text: string;
}

export interface PublicCommentResponse {
  commentId: UUID;

  // Beyond the seed.
  comment: GalleryComment;
  commentsCount: number;
}

// Exports
export type ExportStatus = "queued" | "running" | "done" | "failed"
  // Beyond the seed: stopped by its owner, or its file deleted after its time.
  | "canceled" | "expired";
export type ExportPreset = "full_res" | "web" | "instagram_carousel" | "story_9x16" | "contact_sheet_pdf";

export interface Export {
  id: UUID;
  projectId: UUID;
  preset: ExportPreset;
  settings?: ExportSettings;
  status: ExportStatus;
  progress?: number | null;
  createdAt: ISODateTime;

  // Beyond the seed.
  batchId: UUID | null;
  jobId: UUID | null;
  /** The assets left out, and why. */
  skipped: Array<{ assetId: UUID; filename: string; reason: string; message: string }> | null;
  error: ErrorSummary | null;
  byteSize: number | null;
  updatedAt: ISODateTime;
  startedAt: ISODateTime | null;
  /** When the file is deleted. */
  expiresAt: ISODateTime | null;
}

export interface CreateExportRequest {
  preset: ExportPreset;
  assetIds?: UUID[] | null;
  settings?: ExportSettings;
}

/**
 * An export's settings over its preset's defaults; each preset takes some.
 * Sizes are bounds: a photo is never enlarged, and a size past 2048 is
 * taken as 2048. The export's answer shows the settings in force.
 */
export interface ExportSettings {
  longEdge?: number;
  width?: number;
  height?: number;
  quality?: number;
  perPage?: number;
  /** Include photos still processing (default true). */
  includeNotReady?: boolean;
  /**
   * Draw each photo with its newest edit, from its original (default
   * true); full_res then holds an edited photo as a full-size JPEG.
   */
  includeEdits?: boolean;
  /**
   * Write the owner's cull as XMP (default false): a sidecar beside each
   * original, a packet inside each rendered JPEG.
   */
  xmp?: boolean;
  /** Sidecar names (full_res): NAME.xmp (adobe, default) or NAME.EXT.xmp. */
  xmpNaming?: "adobe" | "darktable";
  /** How a pick is written: "none" (default), "rating:N" or "label:COLOUR". */
  picked?: string;
  /** Which files of a RAW+JPEG pair go in: both (default), the raw, or the JPEG. */
  pairs?: "both" | "raw" | "jpeg";
}

/** A crop in fractions of the photo as shown, before the edit's turn. */
export interface EditCrop {
  x: number;
  y: number;
  w: number;
  h: number;
  /**
   * Width over height in pixels, for a crop drawn at a fixed ratio: it
   * keeps that ratio on every photo it is applied to.
   */
  ratio?: number;
}

export interface ExportDownloadResponse {
  url: string;
  expiresAt?: ISODateTime | null;

  // Beyond the seed.
  byteSize: number | null;
}

// Jobs
export type JobStatus = "queued" | "running" | "done" | "failed" | "canceled";

export interface Job {
  id: UUID;
  projectId?: UUID | null;
  assetId?: UUID | null;
  type: string;
  status: JobStatus;
  progress?: number | null;
  error?: string | null;
  createdAt: ISODateTime;
  updatedAt: ISODateTime;

  // Beyond the seed.
  batchId: UUID | null;
  attempt: number;
  /** The error's stable code, beside its message in error. */
  errorCode: string | null;
  /** When a failed attempt runs again. */
  nextRunAt: ISODateTime | null;
}

// Beyond the seed: the rest of what the app reads and sends.

export interface ErrorSummary {
  code: string;
  message: string;
}

export interface FinalizedAsset {
  assetId: UUID;
  status: "uploaded" | "duplicate" | "failed" | "pending_upload";
  /** The asset that already holds the same bytes. */
  duplicateOf?: UUID;
  error?: ErrorSummary;
}

export interface GalleryComment {
  id: UUID;
  assetId: UUID;
  text: string;
  createdAt: ISODateTime;
}

export interface RefreshRequest {
  refreshToken: string;
}

export interface ProjectStats {
  total: number;
  uploading: number;
  processing: number;
  embedding: number;
  ready: number;
  failed: number;
}

export type BatchStatus = "running" | "completed" | "partial" | "failed" | "cancelled";

export interface Batch {
  id: UUID;
  projectId: UUID;
  kind: "upload" | "import" | "reprocess" | "export" | "edit" | "gallery";
  status: BatchStatus;
  total: number;
  completed: number;
  failed: number;
  createdAt: ISODateTime;
  completedAt: ISODateTime | null;
}

export interface BatchResponse {
  batch: Batch;
  jobs: Job[];
}

export interface StreamToken {
  token: string;
  expiresAt: ISODateTime;
}

export interface RetriedJobs {
  retriedJobs: UUID[];
  duplicates?: Array<{ jobId: UUID; assetId: UUID; duplicateOf: UUID }>;
}
