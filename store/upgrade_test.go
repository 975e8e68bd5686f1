package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// upgradeBases are the schemas the upgrade test starts from, as earlier
// releases left them. 0034 comes before the migrations that backfill
// project_asset_counts and asset_search from existing assets (0036, 0038);
// 0045 has both tables filled by their triggers, and comes before the
// webhook marks 0047 sets on rows that already ended. Both stay fixed as
// migrations are added: the test always migrates to the newest.
var upgradeBases = []int{34, 45}

// The fixture's ids, named in its SQL as {owner}, {project}, and so on.
var (
	fxOwner       = uuid.MustParse("0a1b2c3d-0000-4000-8000-000000000001")
	fxKey         = uuid.MustParse("0a1b2c3d-0000-4000-8000-000000000002")
	fxProject     = uuid.MustParse("0a1b2c3d-0000-4000-8000-000000000003")
	fxPhoto1      = uuid.MustParse("0a1b2c3d-0000-4000-8000-000000000004")
	fxPhoto2      = uuid.MustParse("0a1b2c3d-0000-4000-8000-000000000005")
	fxDuplicate   = uuid.MustParse("0a1b2c3d-0000-4000-8000-000000000006")
	fxBurst       = uuid.MustParse("0a1b2c3d-0000-4000-8000-000000000007")
	fxUpload      = uuid.MustParse("0a1b2c3d-0000-4000-8000-000000000008")
	fxExportBatch = uuid.MustParse("0a1b2c3d-0000-4000-8000-000000000009")
	fxIngest1     = uuid.MustParse("0a1b2c3d-0000-4000-8000-00000000000a")
	fxIngest2     = uuid.MustParse("0a1b2c3d-0000-4000-8000-00000000000b")
	fxEmbed       = uuid.MustParse("0a1b2c3d-0000-4000-8000-00000000000c")
	fxExportJob   = uuid.MustParse("0a1b2c3d-0000-4000-8000-00000000000d")
	fxExport      = uuid.MustParse("0a1b2c3d-0000-4000-8000-00000000000e")
	fxWebhook     = uuid.MustParse("0a1b2c3d-0000-4000-8000-00000000000f")
	fxDelivery    = uuid.MustParse("0a1b2c3d-0000-4000-8000-000000000010")
	fxChallenge   = uuid.MustParse("0a1b2c3d-0000-4000-8000-000000000011")
	fxGallery     = uuid.MustParse("0a1b2c3d-0000-4000-8000-000000000012")
	fxViewer      = uuid.MustParse("0a1b2c3d-0000-4000-8000-000000000013")
	fxComment     = uuid.MustParse("0a1b2c3d-0000-4000-8000-000000000014")
	fxEdit        = uuid.MustParse("0a1b2c3d-0000-4000-8000-000000000015")
)

// The secrets whose hashes the fixture stores, so the test can sign in
// with them after the upgrade.
const (
	fxAPIKey  = "lbx_upgradefixturekey0000000000000000000000000000000"
	fxSession = "upgradefixturesession00000000000000000000000000000"
)

var fixtureIDs = strings.NewReplacer(
	"{owner}", fxOwner.String(), "{key}", fxKey.String(), "{project}", fxProject.String(),
	"{photo1}", fxPhoto1.String(), "{photo2}", fxPhoto2.String(), "{duplicate}", fxDuplicate.String(),
	"{burst}", fxBurst.String(), "{upload}", fxUpload.String(), "{exportbatch}", fxExportBatch.String(),
	"{ingest1}", fxIngest1.String(), "{ingest2}", fxIngest2.String(), "{embed}", fxEmbed.String(),
	"{exportjob}", fxExportJob.String(), "{export}", fxExport.String(), "{webhook}", fxWebhook.String(),
	"{delivery}", fxDelivery.String(), "{challenge}", fxChallenge.String(), "{gallery}", fxGallery.String(),
	"{viewer}", fxViewer.String(), "{comment}", fxComment.String(), "{edit}", fxEdit.String(),
	"{apikey}", fxAPIKey, "{session}", fxSession,
)

// upgradeRow is what one photographer's library holds in one table: a
// wedding shot, uploaded, culled, grouped, attested, exported and shown to
// the couple in a gallery. since is the migration that made the table (a
// base before it skips the row), and the SQL uses only the columns the
// table had at the oldest base. Tables that triggers on assets fill
// (user_usage, project_asset_counts, asset_search) have no row here.
type upgradeRow struct {
	table string
	since int
	sql   string
}

// upgradeRows are in the order their foreign keys need.
var upgradeRows = []upgradeRow{
	{"users", 1, `INSERT INTO users (id, email, is_admin, created_at, quota_bytes)
		VALUES ('{owner}', 'ana@example.org', false, '2024-05-02 09:00+00', 107374182400)`},
	{"api_keys", 1, `INSERT INTO api_keys (id, user_id, name, prefix, key_hash, created_at, last_used_at)
		VALUES ('{key}', '{owner}', 'laptop', left('{apikey}', 10), sha256(convert_to('{apikey}', 'UTF8')),
			'2024-05-02 09:00+00', '2024-06-01 13:00+00')`},
	{"sessions", 1, `INSERT INTO sessions (token_hash, api_key_id, expires_at)
		VALUES (sha256(convert_to('{session}', 'UTF8')), '{key}', now() + interval '30 days')`},
	{"projects", 2, `INSERT INTO projects (id, owner_user_id, title, description, shoot_date, timezone, created_at, updated_at)
		VALUES ('{project}', '{owner}', 'Ana & Bo wedding', 'Ceremony and reception', '2024-06-01', 'Europe/Lisbon',
			'2024-05-20 10:00+00', '2024-06-01 16:00+00')`},
	{"idempotency_keys", 2, `INSERT INTO idempotency_keys (user_id, key, method, path, request_hash, status_code, content_type, body)
		VALUES ('{owner}', 'uploads-2024-06-01', 'POST', '/v1/projects/{project}/uploads', sha256('{"files":3}'::bytea),
			201, 'application/json', convert_to('{"batchId":"{upload}"}', 'UTF8'))`},
	// Two photos ready (one with its vector, one without) and a duplicate
	// of the first, whose bytes were let go.
	{"assets", 3, `INSERT INTO assets (id, project_id, client_file_id, filename, content_type, byte_size, blob_key,
			checksum_sha256, upload_size, uploaded_at, status, duplicate_of, finalized_at, captured_at, captured_offset,
			ingested_at, width_px, height_px, camera_make, camera_model, lens_model, focal_length_mm, shutter_speed,
			aperture, iso, gps_lat, gps_lon, exif, quality, keywords, notes, created_at, updated_at)
		VALUES
		('{photo1}', '{project}', 'cf-0412', 'ANA-0412.jpg', 'image/jpeg', 24117248, 'originals/{project}/{photo1}',
			repeat('a1', 32), 24117248, '2024-06-01 15:10:00+00', 'ai', NULL, '2024-06-01 15:10:01+00',
			'2024-06-01 14:02:11+00', '+01:00', '2024-06-01 15:10:05+00', 8192, 5464, 'Canon', 'EOS R5',
			'RF85mm F1.2 L USM', 85, '1/250', 1.8, 200, 38.7071, -9.1355,
			'{"Make": "Canon", "Model": "EOS R5", "ExposureTime": "1/250"}', '{"sharpness": 0.82, "exposure": 0.1}',
			'{ceremony,rings}', 'the rings', '2024-06-01 15:09:58+00', '2024-06-01 15:10:05+00'),
		('{photo2}', '{project}', 'cf-0413', 'ANA-0413.jpg', 'image/jpeg', 23068672, 'originals/{project}/{photo2}',
			repeat('a2', 32), 23068672, '2024-06-01 15:10:02+00', 'search', NULL, '2024-06-01 15:10:03+00',
			'2024-06-01 14:02:12+00', '+01:00', '2024-06-01 15:10:09+00', 8192, 5464, 'Canon', 'EOS R5',
			'RF85mm F1.2 L USM', 85, '1/250', 1.8, 200, 38.7071, -9.1355,
			'{"Make": "Canon", "Model": "EOS R5"}', '{"sharpness": 0.61, "exposure": 0.2}',
			'{ceremony}', '', '2024-06-01 15:09:58+00', '2024-06-01 15:10:09+00'),
		('{duplicate}', '{project}', 'cf-0412b', 'ANA-0412 (1).jpg', 'image/jpeg', 24117248, 'originals/{project}/{duplicate}',
			repeat('a1', 32), 24117248, '2024-06-01 15:10:04+00', 'duplicate', '{photo1}', '2024-06-01 15:10:04+00',
			NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
			'{}', '{}', '{}', '', '2024-06-01 15:09:58+00', '2024-06-01 15:10:04+00')`},
	{"asset_files", 3, `INSERT INTO asset_files (asset_id, kind, blob_key, content_type, byte_size, checksum_sha256, width_px, height_px)
		VALUES ('{photo1}', 'thumbnail', 'derived/{photo1}/thumbnail.jpg', 'image/jpeg', 18432, repeat('b1', 32), 512, 341),
		       ('{photo1}', 'preview', 'derived/{photo1}/preview.jpg', 'image/jpeg', 412672, repeat('b2', 32), 2048, 1365),
		       ('{photo2}', 'thumbnail', 'derived/{photo2}/thumbnail.jpg', 'image/jpeg', 17920, repeat('b3', 32), 512, 341),
		       ('{photo2}', 'preview', 'derived/{photo2}/preview.jpg', 'image/jpeg', 398336, repeat('b4', 32), 2048, 1365)`},
	{"perceptual_hashes", 3, `INSERT INTO perceptual_hashes (asset_id, algorithm, hash)
		VALUES ('{photo1}', 'dhash', -4823512398102391234), ('{photo2}', 'dhash', -4823512398102391230)`},
	{"embeddings", 3, `INSERT INTO embeddings (asset_id, model, vector)
		SELECT '{photo1}', 'builtin-descriptor-v1', array_agg(sin(i)::real ORDER BY i) FROM generate_series(1, 80) i`},
	{"clusters", 3, `INSERT INTO clusters (id, project_id, kind, title, start_time, end_time, score, reviewed, winner_asset_id, why_winner)
		VALUES ('{burst}', '{project}', 'burst', 'The rings', '2024-06-01 14:02:11+00', '2024-06-01 14:02:12+00', 0.82, true,
			'{photo1}', '{sharpest,eyes_open}')`},
	{"cluster_assets", 3, `INSERT INTO cluster_assets (cluster_id, asset_id, rank, role, signals)
		VALUES ('{burst}', '{photo1}', 1, 'winner', '{"sharpness": 0.82}'), ('{burst}', '{photo2}', 2, 'alt', '{"sharpness": 0.61}')`},
	{"batches", 4, `INSERT INTO batches (id, project_id, user_id, kind, status, total, completed, failed, created_at, completed_at)
		VALUES ('{upload}', '{project}', '{owner}', 'upload', 'completed', 2, 2, 0, '2024-06-01 15:09:58+00', '2024-06-01 15:11:00+00'),
		       ('{exportbatch}', '{project}', '{owner}', 'export', 'completed', 1, 1, 0, '2024-06-02 08:00+00', '2024-06-02 08:03+00')`},
	// The embedding of the second photo failed for good: it stays searchable
	// by its words, without a vector.
	{"jobs", 4, `INSERT INTO jobs (id, project_id, asset_id, batch_id, type, queue, task_id, payload, status, progress, attempt,
			error_code, error_message, enqueued_at, created_at, updated_at)
		VALUES
		('{ingest1}', '{project}', '{photo1}', '{upload}', 'asset:ingest', 'default', 'ingest:{photo1}', '{"assetId": "{photo1}"}',
			'done', 1, 1, NULL, NULL, '2024-06-01 15:10:01+00', '2024-06-01 15:10:01+00', '2024-06-01 15:10:05+00'),
		('{ingest2}', '{project}', '{photo2}', '{upload}', 'asset:ingest', 'default', 'ingest:{photo2}', '{"assetId": "{photo2}"}',
			'done', 1, 1, NULL, NULL, '2024-06-01 15:10:03+00', '2024-06-01 15:10:03+00', '2024-06-01 15:10:09+00'),
		('{embed}', '{project}', '{photo2}', NULL, 'asset:embed', 'low', 'embed:{photo2}', '{"assetId": "{photo2}"}',
			'failed', 0, 5, 'provider_unavailable', 'The embedding provider did not answer.',
			'2024-06-01 15:10:09+00', '2024-06-01 15:10:09+00', '2024-06-01 15:40:00+00'),
		('{exportjob}', '{project}', NULL, '{exportbatch}', 'project:export', 'critical', 'export:{export}', '{"exportId": "{export}"}',
			'done', 1, 1, NULL, NULL, '2024-06-02 08:00+00', '2024-06-02 08:00+00', '2024-06-02 08:03+00')`},
	{"exports", 4, `INSERT INTO exports (id, project_id, user_id, preset, settings, status, progress, blob_key, byte_size,
			batch_id, job_id, started_at, created_at, updated_at, expires_at)
		VALUES ('{export}', '{project}', '{owner}', 'web', '{"size": 2048, "quality": 85}', 'done', 1,
			'exports/{export}/Ana-Bo-wedding.zip', 5242880, '{exportbatch}', '{exportjob}',
			'2024-06-02 08:00:05+00', '2024-06-02 08:00+00', '2024-06-02 08:03+00', now() + interval '7 days')`},
	// The first photo attested, the second still waiting for the flusher.
	{"attestation_queue", 5, `INSERT INTO attestation_queue (asset_id, project_id, cid, op, visibility, ts, status, attempts)
		VALUES ('{photo1}', '{project}', 'bafkreia1' || repeat('a', 50), 'ingest', 'private', '2024-06-01 15:10:05+00', 'attested', 1),
		       ('{photo2}', '{project}', 'bafkreia2' || repeat('b', 50), 'ingest', 'private', '2024-06-01 15:10:09+00', 'pending', 0)`},
	{"attestations", 5, `INSERT INTO attestations (seq, queue_id, asset_id, cid, tx_id, prev_tx, prev_cid, payload, signature, created_at)
		SELECT 1, id, asset_id, cid, repeat('c1', 32), '', '', convert_to('{"seq": 1}', 'UTF8'), decode(repeat('d1', 64), 'hex'),
			'2024-06-01 15:10:07+00'
		FROM attestation_queue WHERE asset_id = '{photo1}'`},
	{"chain_head", 5, `UPDATE chain_head SET seq = 1, tx_id = repeat('c1', 32), cid = 'bafkreia1' || repeat('a', 50),
		last_batch = 1, last_batch_ms = 12.5, updated_at = '2024-06-01 15:10:07+00'`},
	{"cluster_runs", 6, `INSERT INTO cluster_runs (project_id, run, done_run, started_at, finished_at)
		VALUES ('{project}', 1, 1, '2024-06-01 15:12:00+00', '2024-06-01 15:12:02+00')`},
	{"webhooks", 28, `INSERT INTO webhooks (id, user_id, url, events, secret, created_at)
		VALUES ('{webhook}', '{owner}', 'https://hooks.example.org/lightbox', '{batch.completed,export.updated}',
			'0123456789abcdef0123456789abcdef', '2024-05-02 09:05+00')`},
	{"webhook_deliveries", 28, `INSERT INTO webhook_deliveries (id, webhook_id, event, payload, status, attempts, response_status,
			created_at, updated_at, delivered_at)
		VALUES ('{delivery}', '{webhook}', 'batch.completed', '{"batchId": "{upload}", "status": "completed"}', 'done', 1, 200,
			'2024-06-01 15:11:00+00', '2024-06-01 15:11:01+00', '2024-06-01 15:11:01+00')`},
	{"ratings", 32, `INSERT INTO ratings (asset_id, user_id, rating, picked, rejected, starred, notes, updated_at)
		VALUES ('{photo1}', '{owner}', 5, true, false, true, 'album cover', '2024-06-02 07:30+00'),
		       ('{photo2}', '{owner}', NULL, false, true, false, '', '2024-06-02 07:31+00')`},
	{"sign_in_challenges", 33, `INSERT INTO sign_in_challenges (id, email, user_id, code_hash, attempts, expires_at, used_at, created_at)
		VALUES ('{challenge}', 'ana@example.org', '{owner}', sha256('482913'::bytea), 1,
			'2024-06-01 13:10+00', '2024-06-01 13:01+00', '2024-06-01 13:00+00')`},
	{"refresh_tokens", 33, `INSERT INTO refresh_tokens (token_hash, api_key_id, expires_at)
		VALUES (sha256('upgradefixturerefresh'::bytea), '{key}', now() + interval '30 days')`},
	{"galleries", 34, `INSERT INTO galleries (id, project_id, title, slug, watermark, allow_downloads, created_at, updated_at)
		VALUES ('{gallery}', '{project}', 'Ana & Bo: your picks', 'ana-bo-picks', true, false,
			'2024-06-02 09:00+00', '2024-06-02 09:00+00')`},
	{"gallery_assets", 34, `INSERT INTO gallery_assets (gallery_id, asset_id, watermark_key)
		VALUES ('{gallery}', '{photo1}', 'galleries/{gallery}/{photo1}-0a1b2c3d-0000-4000-8000-0000000000f1.jpg'),
		       ('{gallery}', '{photo2}', 'galleries/{gallery}/{photo2}-0a1b2c3d-0000-4000-8000-0000000000f2.jpg')`},
	{"gallery_viewers", 34, `INSERT INTO gallery_viewers (id, gallery_id, token_hash, auth_version, expires_at)
		VALUES ('{viewer}', '{gallery}', sha256('upgradefixtureviewer'::bytea), 0, now() + interval '30 days')`},
	{"gallery_favorites", 34, `INSERT INTO gallery_favorites (gallery_id, asset_id, viewer_id)
		VALUES ('{gallery}', '{photo1}', '{viewer}')`},
	{"gallery_comments", 34, `INSERT INTO gallery_comments (id, gallery_id, asset_id, viewer_id, body)
		VALUES ('{comment}', '{gallery}', '{photo1}', '{viewer}', 'This one for the album, please!')`},
	{"edit_versions", 35, `INSERT INTO edit_versions (id, asset_id, user_id, name, params, applied_at, created_at, updated_at)
		VALUES ('{edit}', '{photo1}', '{owner}', 'warmer', '{"temperature": 400, "exposure": 0.3}',
			'2024-06-03 09:00+00', '2024-06-03 09:00+00', '2024-06-03 09:00+00')`},
	// The applied edit's render; the kinds exist since edit_versions does.
	{"asset_files", 35, `INSERT INTO asset_files (asset_id, kind, blob_key, content_type, byte_size, checksum_sha256, width_px, height_px)
		VALUES ('{photo1}', 'edit_preview', 'derived/{photo1}/edit_preview.jpg', 'image/jpeg', 405504, repeat('b5', 32), 2048, 1365),
		       ('{photo1}', 'edit_thumbnail', 'derived/{photo1}/edit_thumbnail.jpg', 'image/jpeg', 18944, repeat('b6', 32), 512, 341)`},
	{"blob_discards", 43, `INSERT INTO blob_discards (blob_key, url_expires_at)
		VALUES ('originals/{project}/{duplicate}', '2024-06-01 16:10:04+00')`},
}

// TestUpgradeKeepsEveryRow loads a database as an earlier release left it,
// with rows in every table, and migrates it to now: every migration
// applies once, no row is lost, and the store reads them as the server
// and worker would.
func TestUpgradeKeepsEveryRow(t *testing.T) {
	all, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range upgradeBases {
		t.Run(fmt.Sprintf("from%04d", base), func(t *testing.T) {
			if !slices.ContainsFunc(all, func(m store.Migration) bool { return m.Version == base }) {
				t.Fatalf("no migration has version %d to start the upgrade from", base)
			}
			testUpgrade(t, all, base)
		})
	}
}

func testUpgrade(t *testing.T, all []store.Migration, base int) {
	env := testenv.New(t)
	ctx := context.Background()
	emptySchema(t, env)
	if _, err := env.Store.MigrateTo(ctx, nil, base); err != nil {
		t.Fatalf("migrate to %d: %v", base, err)
	}
	for _, r := range upgradeRows {
		if r.since > base {
			continue
		}
		if _, err := env.DB.ExecContext(ctx, fixtureIDs.Replace(r.sql)); err != nil {
			t.Fatalf("fixture rows of %s at version %d: %v", r.table, base, err)
		}
	}
	before := tableRows(t, env.DB)
	for table, n := range before {
		if n == 0 {
			t.Errorf("table %s exists at version %d but the upgrade fixture leaves it empty: add realistic rows for it to upgradeRows", table, base)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	done, err := env.Store.Migrate(ctx, nil)
	if err != nil {
		t.Fatalf("migrate from %d to now: %v", base, err)
	}
	var later, versions []int
	for _, m := range all {
		versions = append(versions, m.Version)
		if m.Version > base {
			later = append(later, m.Version)
		}
	}
	if !slices.Equal(done, later) {
		t.Errorf("migrating from %d applied %v, want %v", base, done, later)
	}
	var recorded []int
	if err := env.DB.SelectContext(ctx, &recorded, `SELECT version FROM schema_migrations ORDER BY version`); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recorded, versions) {
		t.Errorf("schema_migrations holds %v, want each of %v once", recorded, versions)
	}
	if again, err := env.Store.Migrate(ctx, nil); err != nil || len(again) != 0 {
		t.Errorf("a second migrate applied %v (%v), want nothing", again, err)
	}

	after := tableRows(t, env.DB)
	for table, n := range before {
		if m, ok := after[table]; ok && table != "schema_migrations" && m != n {
			t.Errorf("table %s held %d rows at version %d and %d after the upgrade", table, n, base, m)
		}
	}

	readUpgraded(t, env.Store, base)
}

// readUpgraded reads the fixture back through the store, as the server
// and worker do once the upgraded database is theirs.
func readUpgraded(t *testing.T, st *store.Store, base int) {
	ctx := context.Background()
	edited := base >= 35 // the fixture has an edit version

	p, err := st.PrincipalByAPIKey(ctx, fxAPIKey)
	if err != nil || p.ID != fxOwner || p.KeyID != fxKey {
		t.Errorf("API key: %+v, %v; want the owner's key", p, err)
	}
	if p, err := st.PrincipalBySession(ctx, fxSession); err != nil || p.ID != fxOwner {
		t.Errorf("session: %+v, %v; want the owner", p, err)
	}

	project, err := st.Project(ctx, fxOwner, fxProject)
	if err != nil {
		t.Fatalf("project: %v", err)
	}
	// Counted from project_asset_counts: 0036 backfilled it from the assets
	// there, or the triggers counted them as they were inserted.
	if project.Title != "Ana & Bo wedding" || project.Total != 2 || project.Ready != 2 || project.DetectFaces {
		t.Errorf("project: %q, %+v, detect faces %v; want its title, 2 photos ready and faces off", project.Title, project.ProjectStats, project.DetectFaces)
	}

	a, err := st.Asset(ctx, fxOwner, fxPhoto1)
	if err != nil {
		t.Fatalf("asset: %v", err)
	}
	if a.Filename != "ANA-0412.jpg" || a.Status != store.AssetAI || a.CameraModel == nil || *a.CameraModel != "EOS R5" ||
		!slices.Equal(a.Keywords, []string{"ceremony", "rings"}) || a.Edited != edited || a.ThumbnailAt != nil {
		t.Errorf("asset: %q %s, camera %v, keywords %v, edited %v, thumbnail at %v", a.Filename, a.Status, a.CameraModel, a.Keywords, a.Edited, a.ThumbnailAt)
	}
	files, err := st.AssetFiles(ctx, fxPhoto1)
	kinds := []string{"original", "preview", "thumbnail"}
	if edited {
		kinds = []string{"edit_preview", "edit_thumbnail", "original", "preview", "thumbnail"}
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Kind)
	}
	if err != nil || !slices.Equal(got, kinds) {
		t.Errorf("asset files: %v, %v; want %v", got, err, kinds)
	}

	picked := true
	page, err := st.Assets(ctx, fxProject, store.AssetFilter{User: fxOwner, Picked: &picked}, nil, 10)
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != fxPhoto1 {
		t.Errorf("picked assets: %v, %v; want the first photo", page.Items, err)
	}
	// asset_search: 0038 filled it from the assets there, or its trigger did.
	hits, err := st.Search(ctx, fxProject, "0413", store.SearchFilter{}, 10)
	if err != nil || len(hits) != 1 || hits[0].AssetID != fxPhoto2 {
		t.Errorf("search 0413: %v, %v; want the second photo", hits, err)
	}
	if hits, err := st.Search(ctx, fxProject, "canon", store.SearchFilter{}, 10); err != nil || len(hits) != 2 {
		t.Errorf("search canon: %v, %v; want both ready photos", hits, err)
	}

	ratings, err := st.Ratings(ctx, fxOwner, []uuid.UUID{fxPhoto1, fxPhoto2})
	r1, r2 := ratings[fxPhoto1], ratings[fxPhoto2]
	if err != nil || len(ratings) != 2 || r1.Rating == nil || *r1.Rating != 5 || !r1.Picked || !r1.Starred || r1.Notes != "album cover" ||
		r1.ColorLabel != nil || r1.Assisted || !r2.Rejected || r2.Rating != nil {
		t.Errorf("ratings: %+v, %v; want 5 stars picked on the first, the second rejected, none assisted or labelled", ratings, err)
	}
	cull, err := st.CullPhotos(ctx, fxProject, fxOwner)
	if err != nil || len(cull) != 2 || cull[0].ID != fxPhoto1 || cull[0].Burst == nil || *cull[0].Burst != fxBurst ||
		cull[0].Rating == nil || !cull[0].Rating.Picked || cull[0].Faces != nil {
		t.Errorf("cull photos: %+v, %v; want both, the first in its burst, picked, not scanned for faces", cull, err)
	}
	clusters, err := st.Clusters(ctx, fxProject, "burst", nil, 10)
	if err != nil || len(clusters.Items) != 1 || clusters.Items[0].WinnerAssetID == nil || *clusters.Items[0].WinnerAssetID != fxPhoto1 {
		t.Errorf("bursts: %+v, %v; want one won by the first photo", clusters.Items, err)
	}
	vectors, _, err := st.ProjectVectors(ctx, fxProject, "builtin-descriptor-v1", time.Time{})
	if err != nil || len(vectors) != 1 || vectors[0].AssetID != fxPhoto1 || len(vectors[0].Vector) != 80 {
		t.Errorf("vectors: %d, %v; want the first photo's 80", len(vectors), err)
	}
	wantVersions := 0
	if edited {
		wantVersions = 1
	}
	if versions, err := st.EditVersions(ctx, fxPhoto1); err != nil || len(versions) != wantVersions {
		t.Errorf("edit versions: %+v, %v; want %d", versions, err, wantVersions)
	}

	batch, err := st.Batch(ctx, fxOwner, fxUpload)
	if err != nil || batch.Status != "completed" || batch.Completed != 2 {
		t.Errorf("upload batch: %+v, %v", batch, err)
	}
	if jobs, err := st.BatchJobs(ctx, fxUpload); err != nil || len(jobs) != 2 || jobs[0].Status != store.JobDone {
		t.Errorf("upload batch's jobs: %+v, %v; want two done", jobs, err)
	}
	export, err := st.Export(ctx, fxOwner, fxExport)
	if err != nil || export.Status != store.JobDone || export.BlobKey == nil || *export.BlobKey != "exports/"+fxExport.String()+"/Ana-Bo-wedding.zip" {
		t.Errorf("export: %+v, %v", export, err)
	}
	usage, err := st.Usage(ctx, fxOwner)
	if err != nil || usage.BytesStored != 24117248+23068672 || usage.Exports != 1 || usage.ExportBytes != 5242880 {
		t.Errorf("usage: %+v, %v; want both originals (not the duplicate's) and the export counted", usage, err)
	}
	// 0047 counts what ended before it as told: the upgrade must not send
	// old events to the webhooks again.
	now := time.Now()
	if b, err := st.UnnotifiedBatches(ctx, now, 10); err != nil || len(b) != 0 {
		t.Errorf("batches to tell: %+v, %v; want none", b, err)
	}
	if e, err := st.UnnotifiedExports(ctx, now, 10); err != nil || len(e) != 0 {
		t.Errorf("exports to tell: %+v, %v; want none", e, err)
	}
	if j, err := st.UnnotifiedFailures(ctx, now, 10); err != nil || len(j) != 0 {
		t.Errorf("failures to tell: %+v, %v; want none", j, err)
	}
	hooks, err := st.Webhooks(ctx, fxOwner, nil, 10)
	if err != nil || len(hooks.Items) != 1 || hooks.Items[0].URL != "https://hooks.example.org/lightbox" {
		t.Errorf("webhooks: %+v, %v", hooks.Items, err)
	}
	if d, err := st.Deliveries(ctx, fxOwner, fxWebhook, nil, 10); err != nil || len(d.Items) != 1 || d.Items[0].Status != store.DeliveryDone {
		t.Errorf("deliveries: %+v, %v", d.Items, err)
	}

	head, err := st.ChainHead(ctx)
	if err != nil || head.Seq != 1 {
		t.Errorf("chain head: %+v, %v; want seq 1", head, err)
	}
	att, err := st.AttestationBySeq(ctx, 1)
	if err != nil || att.AssetID == nil || *att.AssetID != fxPhoto1 || att.PublicKey != "" {
		t.Errorf("attestation 1: %+v, %v; want the first photo's, with no key recorded", att, err)
	}
	if counts, err := st.AttestationQueueCounts(ctx); err != nil || counts["pending"] != 1 {
		t.Errorf("attestation queue: %v, %v; want the second photo pending", counts, err)
	}

	g, err := st.Gallery(ctx, fxOwner, fxGallery)
	if err != nil || g.Slug != "ana-bo-picks" || g.AssetCount != 2 || g.FavoriteCount != 1 || g.CommentsCount != 1 ||
		g.WatermarkPosition != "corner" || g.SelectionLimit != nil {
		t.Errorf("gallery: %+v, %v; want its two photos, a favourite and a comment, default watermark, no limit", g, err)
	}
	items, err := st.GalleryItems(ctx, fxGallery, &fxViewer)
	if err != nil || len(items) != 2 || items[0].AssetID != fxPhoto1 || !items[0].Favorited || items[0].Edited != edited {
		t.Errorf("gallery items: %+v, %v; want both photos, the first favourited by the viewer", items, err)
	}
	if c, err := st.GalleryComments(ctx, fxGallery, nil, 10); err != nil || len(c.Items) != 1 || c.Items[0].Body != "This one for the album, please!" {
		t.Errorf("gallery comments: %+v, %v", c.Items, err)
	}
	if f, err := st.GalleryFavorites(ctx, fxGallery); err != nil || len(f) != 1 || f[0].Name != nil || !slices.Equal(f[0].AssetIDs, store.UUIDs{fxPhoto1}) {
		t.Errorf("gallery favourites: %+v, %v; want an anonymous viewer's one", f, err)
	}
}

// TestMigrateRefusesASchemaNewerThanItKnows: a database that a later
// release migrated is refused with the version to run instead, by Migrate
// (so by the server and worker at start) before it applies anything, and
// by the dry run.
func TestMigrateRefusesASchemaNewerThanItKnows(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	all, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	// Two migrations are left pending, so applying nothing is visible.
	known := all[len(all)-1].Version
	emptySchema(t, env)
	if _, err := env.Store.MigrateTo(ctx, nil, all[len(all)-3].Version); err != nil {
		t.Fatal(err)
	}
	future := known + 2
	name := fmt.Sprintf("%04d_from_a_later_release.sql", future)
	if _, err := env.DB.ExecContext(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, future, name); err != nil {
		t.Fatal(err)
	}
	var before []int
	if err := env.DB.SelectContext(ctx, &before, `SELECT version FROM schema_migrations ORDER BY version`); err != nil {
		t.Fatal(err)
	}

	want := fmt.Sprintf("database schema is at version %d (%s), but this Lightbox knows migrations only up to %d: "+
		"run a Lightbox built with migration %d or newer", future, name, known, future)
	done, err := env.Store.Migrate(ctx, nil)
	var tooNew *store.SchemaTooNewError
	if !errors.As(err, &tooNew) || err.Error() != want || len(done) != 0 {
		t.Fatalf("migrate: applied %v, error %v\nwant nothing applied and %q", done, err, want)
	}
	if tooNew.Version != future || tooNew.Name != name || tooNew.Known != known {
		t.Errorf("error fields %+v", tooNew)
	}
	var after []int
	if err := env.DB.SelectContext(ctx, &after, `SELECT version FROM schema_migrations ORDER BY version`); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(after, before) {
		t.Errorf("schema_migrations went from %v to %v; want nothing applied", before, after)
	}
	if _, pending, err := env.Store.PendingMigrations(ctx); !errors.As(err, &tooNew) || err.Error() != want {
		t.Errorf("pending migrations: %v, %v; want %q", pending, err, want)
	}
}

// emptySchema drops every table of env's schema, as on a new install.
func emptySchema(t *testing.T, env *testenv.Env) {
	t.Helper()
	if _, err := env.DB.Exec("DROP SCHEMA " + env.Schema + " CASCADE; CREATE SCHEMA " + env.Schema); err != nil {
		t.Fatal(err)
	}
}

// tableRows counts the rows of every table in db's schema.
func tableRows(t *testing.T, db *sqlx.DB) map[string]int {
	t.Helper()
	var tables []string
	if err := db.Select(&tables, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]int, len(tables))
	for _, table := range tables {
		var n int
		if err := db.Get(&n, `SELECT count(*) FROM `+pq.QuoteIdentifier(table)); err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
		out[table] = n
	}
	return out
}
