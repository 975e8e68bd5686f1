// The contract between src/types.ts and server/openapi.yaml.
//
// types.ts is read with the TypeScript parser (its syntax, so the names of
// aliases such as UUID and ISODateTime stay visible), the document with a
// YAML parser, and both are brought to one small set of shapes. A type the
// app receives must accept everything the document says the server may
// answer; a type the app sends must hold only what the document says the
// server takes. Both ways, every field of the SDK's type is in the
// document, and every field the document requires is in the SDK's type.

import { readFileSync } from "node:fs";
import ts from "typescript";
import YAML from "yaml";

// Where each type of types.ts is in the document: `schema Name` (a
// component), `request METHOD path` (a request body), `response METHOD path
// status`, with `#a.b` to go into a property. `out` types are read from
// answers, `in` types are sent. A type listed in `bare` is no object of
// its own (an alias or a union used inside others).
export const places = {
  ApiError: ["out", "schema Error"],
  PageInfo: ["out", "schema PageInfo"],
  User: ["out", "response POST /v1/auth/verify 200#user"],
  Project: ["out", "schema Project"],
  "Paged<Project>": ["out", "response GET /v1/projects 200"],
  "Paged<Asset>": ["out", "response GET /v1/projects/{id}/assets 200"],
  "Paged<Cluster>": ["out", "response GET /v1/projects/{id}/clusters 200"],
  "Paged<Job>": ["out", "response GET /v1/projects/{id}/jobs 200"],
  CreateProjectRequest: ["in", "request POST /v1/projects"],
  UpdateProjectRequest: ["in", "request PATCH /v1/projects/{id}"],
  LoginStartRequest: ["in", "request POST /v1/auth/login"],
  LoginStartResponse: ["out", "response POST /v1/auth/login 200"],
  LoginVerifyRequest: ["in", "request POST /v1/auth/verify"],
  LoginVerifyResponse: ["out", "response POST /v1/auth/verify 200"],
  Rating: ["out", "response POST /v1/assets/{id}/ratings 200"],
  Asset: ["out", "response GET /v1/assets/{id} 200"],
  UpdateAssetRequest: ["in", "request PATCH /v1/assets/{id}"],
  AssetFile: ["out", "response GET /v1/assets/{id}/files 200#files.items"],
  AssetFilesResponse: ["out", "response GET /v1/assets/{id}/files 200"],
  AssetFaces: ["out", "response GET /v1/assets/{id}/faces 200"],
  Face: ["out", "schema Face"],
  FaceSummary: ["out", "schema FaceSummary"],
  UpsertRatingRequest: ["in", "request POST /v1/assets/{id}/ratings"],
  UploadFileDescriptor: ["in", "request POST /v1/projects/{id}/assets:prepareUpload#files.items"],
  PrepareUploadRequest: ["in", "request POST /v1/projects/{id}/assets:prepareUpload"],
  UploadInstruction: ["out", "response POST /v1/projects/{id}/assets:prepareUpload 200#uploads.items"],
  PrepareUploadResponse: ["out", "response POST /v1/projects/{id}/assets:prepareUpload 200"],
  FinalizeUploadRequest: ["in", "request POST /v1/projects/{id}/assets:finalizeUpload"],
  FinalizeUploadResponse: ["out", "response POST /v1/projects/{id}/assets:finalizeUpload 200"],
  ClusterAsset: ["out", "schema Cluster#assets.items"],
  Cluster: ["out", "response GET /v1/clusters/{id} 200"],
  UpdateClusterRequest: ["in", "request PATCH /v1/clusters/{id}"],
  SetWinnerRequest: ["in", "request POST /v1/clusters/{id}/winner"],
  BulkCullActionRequest: ["in", "request POST /v1/projects/{id}/cull:applyAction"],
  BulkCullActionResponse: ["out", "response POST /v1/projects/{id}/cull:applyAction 200"],
  EditVersion: ["out", "response GET /v1/edits/{id} 200"],
  EditVersionList: ["out", "response GET /v1/assets/{id}/edits 200"],
  CreateEditVersionRequest: ["in", "request POST /v1/assets/{id}/edits"],
  ApplyEditBatchRequest: ["in", "request POST /v1/edits/{id}/applyTo"],
  ApplyEditBatchResponse: ["out", "response POST /v1/edits/{id}/applyTo 202"],
  SearchResponse: ["out", "response GET /v1/projects/{id}/search 200"],
  AdvancedSearchRequest: ["in", "request POST /v1/projects/{id}/search"],
  Gallery: ["out", "response GET /v1/galleries/{id} 200"],
  CreateGalleryRequest: ["in", "request POST /v1/projects/{id}/galleries"],
  UpdateGalleryRequest: ["in", "request PATCH /v1/galleries/{id}"],
  AddGalleryAssetsRequest: ["in", "request POST /v1/galleries/{id}/assets"],
  RemoveGalleryAssetsRequest: ["in", "request DELETE /v1/galleries/{id}/assets"],
  PublicGalleryResponse: ["out", "response GET /v1/share/{slug} 200"],
  PublicGalleryAuthRequest: ["in", "request POST /v1/share/{slug}/auth"],
  PublicGalleryAuthResponse: ["out", "response POST /v1/share/{slug}/auth 200"],
  PublicFavoriteRequest: ["in", "request POST /v1/share/{slug}/favorite"],
  PublicFavoriteResponse: ["out", "response POST /v1/share/{slug}/favorite 200"],
  PublicCommentRequest: ["in", "request POST /v1/share/{slug}/comment"],
  PublicCommentResponse: ["out", "response POST /v1/share/{slug}/comment 201"],
  Export: ["out", "response GET /v1/exports/{id} 200"],
  CreateExportRequest: ["in", "request POST /v1/projects/{id}/exports"],
  ExportDownloadResponse: ["out", "response GET /v1/exports/{id}/download 200"],
  Job: ["out", "schema Job"],
  // Beyond the seed.
  ErrorSummary: ["out", "schema ErrorSummary"],
  FinalizedAsset: ["out", "response POST /v1/projects/{id}/assets:finalizeUpload 200#assets.items"],
  GalleryComment: ["out", "schema Comment"],
  RefreshRequest: ["in", "request POST /v1/auth/refresh"],
  ProjectStats: ["out", "response GET /v1/projects/{id}/stats 200"],
  Batch: ["out", "schema Batch"],
  BatchResponse: ["out", "response GET /v1/batches/{id} 200"],
  StreamToken: ["out", "response POST /v1/realtime/tokens 201"],
  RetriedJobs: ["out", "response POST /v1/batches/{id}/retry 202"],
  SearchFilters: ["in", "request POST /v1/projects/{id}/search#filters"],
  ExportSettings: ["in", "schema ExportSettings"],
  EditCrop: ["in", "schema EditParams#crop"],
  GalleryFavoritesResponse: ["out", "response GET /v1/galleries/{id}/favorites 200"],
  CullStrictness: ["out", "schema CullStrictness"],
  CullStrictnessInput: ["in", "schema CullStrictnessInput"],
  CullReason: ["out", "schema CullReason"],
  CullVerdict: ["out", "schema CullVerdict"],
  CullAction: ["out", "schema CullAction"],
  CullCounts: ["out", "schema CullSuggestion#counts"],
  CullSuggestion: ["out", "response POST /v1/projects/{id}/cull:suggest 200"],
  SuggestCullRequest: ["in", "request POST /v1/projects/{id}/cull:suggest"],
  CullAdjustment: ["out", "schema CullAdjustment"],
  CullPreferences: ["out", "response GET /v1/cull/preferences 200"],
  SetCullPreferencesRequest: ["in", "request PUT /v1/cull/preferences"],
};

// Types that are parts of others, checked where they are used.
export const bare = new Set(["UUID", "ISODateTime", "ISODate", "Cursor", "Paged", "ProjectStatus",
  "AssetFileKind", "ClusterKind", "ExportStatus", "ExportPreset", "JobStatus", "BatchStatus", "ColorLabel", "GalleryVisitor", "WatermarkPosition", "CullCriterion", "CullMark"]);

const formats = { UUID: "uuid", ISODateTime: "date-time", ISODate: "date" };

// ---- shapes ---------------------------------------------------------------
// {k: "any"} | {k: "null"} | {k: "string", enum?, format?} | {k: "number"} |
// {k: "boolean"} | {k: "array", items} | {k: "object", props: {name:
// {shape, required}}, closed, extra?: shape, loose?: true} | {k: "union", of}
// A loose object is one the SDK leaves open on purpose (Record<string,
// unknown>): any object of the document agrees with it.

const ANY = { k: "any" };
const union = (of) => {
  let flat = of.flatMap((s) => (s.k === "union" ? s.of : [s]));
  // "a" | "b" is one string with an enum.
  const enums = flat.filter((s) => s.k === "string" && s.enum);
  if (enums.length > 1) flat = [...flat.filter((s) => !enums.includes(s)), { k: "string", enum: enums.flatMap((s) => s.enum) }];
  return flat.length === 1 ? flat[0] : { k: "union", of: flat };
};

// ---- the SDK's side -------------------------------------------------------

export function readTypes(file) {
  const src = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.ES2022, true);
  const decls = new Map();
  for (const st of src.statements) {
    if (ts.isInterfaceDeclaration(st) || ts.isTypeAliasDeclaration(st)) decls.set(st.name.text, st);
  }
  return { src, decls };
}

// tsShape turns a type node into a shape; env maps type parameters.
function tsShape(types, node, env = new Map(), seen = new Set()) {
  switch (node.kind) {
    case ts.SyntaxKind.StringKeyword: return { k: "string" };
    case ts.SyntaxKind.NumberKeyword: return { k: "number" };
    case ts.SyntaxKind.BooleanKeyword: return { k: "boolean" };
    case ts.SyntaxKind.UnknownKeyword:
    case ts.SyntaxKind.AnyKeyword: return ANY;
    case ts.SyntaxKind.NullKeyword: return { k: "null" };
    case ts.SyntaxKind.LiteralType: {
      const lit = node.literal;
      if (lit.kind === ts.SyntaxKind.NullKeyword) return { k: "null" };
      if (ts.isStringLiteral(lit)) return { k: "string", enum: [lit.text] };
      if (lit.kind === ts.SyntaxKind.TrueKeyword || lit.kind === ts.SyntaxKind.FalseKeyword) return { k: "boolean" };
      if (ts.isNumericLiteral(lit)) return { k: "number" };
      throw new Error(`literal ${node.getText()}`);
    }
    case ts.SyntaxKind.UnionType: {
      return union(node.types.map((t) => tsShape(types, t, env, seen)));
    }
    case ts.SyntaxKind.ParenthesizedType: return tsShape(types, node.type, env, seen);
    case ts.SyntaxKind.ArrayType: return { k: "array", items: tsShape(types, node.elementType, env, seen) };
    case ts.SyntaxKind.TypeLiteral: return objectShape(types, node.members, env, seen);
    case ts.SyntaxKind.TypeReference: {
      const name = node.typeName.getText();
      if (env.has(name)) return env.get(name);
      const args = node.typeArguments ?? [];
      if (name === "Array") return { k: "array", items: tsShape(types, args[0], env, seen) };
      if (name === "Record") {
        const value = tsShape(types, args[1], env, seen);
        return value.k === "any" ? { k: "object", props: {}, closed: false, loose: true } : { k: "object", props: {}, closed: false, extra: value };
      }
      const decl = types.decls.get(name);
      if (!decl) throw new Error(`unknown type ${name}`);
      return declShape(types, decl, args.map((a) => tsShape(types, a, env, seen)), seen);
    }
    default:
      throw new Error(`type ${ts.SyntaxKind[node.kind]} (${node.getText()}) is not handled`);
  }
}

function declShape(types, decl, args = [], seen = new Set()) {
  const name = decl.name.text;
  const env = new Map((decl.typeParameters ?? []).map((p, i) => [p.name.text, args[i] ?? ANY]));
  if (ts.isTypeAliasDeclaration(decl)) {
    const s = tsShape(types, decl.type, env, seen);
    return formats[name] && s.k === "string" ? { ...s, format: formats[name], alias: name } : s;
  }
  const key = name + "<" + args.map((a) => JSON.stringify(a)).join(",") + ">";
  if (seen.has(key)) return { k: "ref", name }; // no recursive types today; stop if one comes
  return objectShape(types, decl.members, env, new Set([...seen, key]));
}

function objectShape(types, members, env, seen) {
  const props = {};
  for (const m of members) {
    if (!ts.isPropertySignature(m)) throw new Error(`member ${m.getText()} is not a property`);
    props[m.name.getText()] = { shape: tsShape(types, m.type, env, seen), required: !m.questionToken };
  }
  return { k: "object", props, closed: false };
}

export function sdkShape(types, expr) {
  const src = ts.createSourceFile("x.ts", `type X = ${expr};`, ts.ScriptTarget.ES2022, true);
  // The expression's own nodes come from another file: parse names only.
  const node = src.statements[0].type;
  const name = node.typeName.getText();
  const decl = types.decls.get(name);
  if (!decl) throw new Error(`types.ts has no ${name}`);
  const args = (node.typeArguments ?? []).map((a) => declShape(types, types.decls.get(a.typeName.getText())));
  return declShape(types, decl, args);
}

// ---- the document's side --------------------------------------------------

export function readDocument(file) {
  return YAML.parse(readFileSync(file, "utf8"));
}

function resolve(doc, s) {
  while (s && s.$ref) {
    const parts = s.$ref.replace(/^#\//, "").split("/");
    let next = doc;
    for (const p of parts) next = next?.[p];
    if (!next) throw new Error(`no ${s.$ref}`);
    s = next;
  }
  return s;
}

export function docShape(doc, s) {
  s = resolve(doc, s);
  if (s === undefined || s === true || Object.keys(s).length === 0) return ANY;
  if (s.allOf) {
    const parts = s.allOf.map((p) => docShape(doc, p));
    const own = s.properties || s.required ? docShape(doc, { type: "object", properties: s.properties ?? {}, required: s.required ?? [] }) : null;
    const merged = { k: "object", props: {}, closed: Boolean(s.unevaluatedProperties === false || s.additionalProperties === false) };
    for (const p of [...parts, ...(own ? [own] : [])]) {
      if (p.k !== "object") throw new Error("allOf of a non-object");
      for (const [name, f] of Object.entries(p.props)) {
        const had = merged.props[name];
        merged.props[name] = { shape: f.shape, required: f.required || Boolean(had?.required) };
      }
    }
    return merged;
  }
  const alts = s.anyOf ?? s.oneOf;
  if (alts) return union(alts.map((a) => docShape(doc, a)));
  if ("const" in s) return constShape(s.const);
  if (s.enum) return union(s.enum.map(constShape));
  const typesOf = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [s.properties ? "object" : s.items ? "array" : "any"];
  return union(typesOf.map((t) => {
    switch (t) {
      case "null": return { k: "null" };
      case "string": return s.format ? { k: "string", format: s.format } : { k: "string" };
      case "integer":
      case "number": return { k: "number" };
      case "boolean": return { k: "boolean" };
      case "array": return { k: "array", items: docShape(doc, s.items) };
      case "any": return ANY;
      case "object": {
        const req = new Set(s.required ?? []);
        const props = {};
        for (const [name, p] of Object.entries(s.properties ?? {})) props[name] = { shape: docShape(doc, p), required: req.has(name) };
        for (const name of req) if (!props[name]) props[name] = { shape: ANY, required: true };
        const closed = s.unevaluatedProperties === false || s.additionalProperties === false;
        const extraSchema = typeof s.additionalProperties === "object" ? s.additionalProperties : undefined;
        const open = !closed && !s.properties && !extraSchema;
        return { k: "object", props, closed, ...(extraSchema ? { extra: docShape(doc, extraSchema) } : {}), ...(open ? { loose: true } : {}) };
      }
      default: throw new Error(`type ${t}`);
    }
  }));
}

function constShape(v) {
  if (v === null) return { k: "null" };
  if (typeof v === "string") return { k: "string", enum: [v] };
  if (typeof v === "number") return { k: "number" };
  if (typeof v === "boolean") return { k: "boolean" };
  throw new Error(`const ${JSON.stringify(v)}`);
}

// place finds the schema a `places` entry names.
export function place(doc, where) {
  const [spot, inner] = where.split("#");
  const words = spot.split(" ");
  let s;
  if (words[0] === "schema") {
    s = doc.components.schemas[words[1]];
  } else {
    const op = doc.paths[words[2]]?.[words[1].toLowerCase()];
    if (!op) throw new Error(`the document has no ${words[1]} ${words[2]}`);
    if (words[0] === "request") {
      s = resolve(doc, op.requestBody)?.content?.["application/json"]?.schema;
    } else {
      const res = resolve(doc, op.responses?.[words[3]]);
      if (!res) throw new Error(`${words[1]} ${words[2]} has no ${words[3]} answer`);
      s = res.content?.["application/json"]?.schema;
    }
  }
  if (!s) throw new Error(`${where}: no JSON schema there`);
  for (const step of inner ? inner.split(".") : []) {
    s = resolve(doc, s);
    s = step === "items" ? s.items : (s.properties?.[step] ?? s.allOf?.map((p) => resolve(doc, p).properties?.[step]).find(Boolean));
    if (!s) throw new Error(`${where}: no ${step}`);
  }
  return s;
}

// ---- agreement ------------------------------------------------------------

const show = (s) => {
  switch (s.k) {
    case "string": return s.enum ? s.enum.map((e) => JSON.stringify(e)).join(" | ") : s.alias ?? (s.format ? `string (${s.format})` : "string");
    case "array": return `${show(s.items)}[]`;
    case "union": return s.of.map(show).join(" | ");
    case "object": return s.loose ? "object" : "{…}";
    default: return s.k;
  }
};

// fits reports, into out, every way a value of shape `sub` can fail to be
// a value of shape `sup`. subSide and supSide name the two sides.
function fits(sub, sup, path, out, sides) {
  if (sup.k === "any" || sub.k === "ref" || sup.k === "ref") return;
  if (sub.k === "union") {
    for (const m of sub.of) fits(m, sup, path, out, sides);
    return;
  }
  if (sup.k === "union") {
    // Fits when some member takes it whole.
    let best = null;
    for (const m of sup.of) {
      if (m.k !== sub.k && !(sub.k === "any")) continue;
      const found = [];
      fits(sub, m, path, found, sides);
      if (!found.length) return;
      if (!best || found.length < best.length) best = found;
    }
    if (best) out.push(...best);
    else out.push(`${path}: ${sides[0]} has ${show(sub)} where ${sides[1]} has ${show(sup)}`);
    return;
  }
  if (sub.k === "any") {
    // The document leaves a value open; the SDK's loose objects agree.
    if (sup.k === "object" && sup.loose) return;
    out.push(`${path}: ${sides[0]} allows any value where ${sides[1]} has ${show(sup)}`);
    return;
  }
  if (sub.k !== sup.k) {
    out.push(`${path}: ${sides[0]} has ${show(sub)} where ${sides[1]} has ${show(sup)}`);
    return;
  }
  switch (sub.k) {
    case "string":
      if (sup.enum) {
        const extra = sub.enum ? sub.enum.filter((e) => !sup.enum.includes(e)) : null;
        if (!sub.enum || extra.length) out.push(`${path}: ${sides[0]} has ${show(sub)} where ${sides[1]} has ${show(sup)}${extra?.length ? ` (${extra.join(", ")} not there)` : ""}`);
      }
      if (sub.format && sup.format && sub.format !== sup.format) out.push(`${path}: ${sides[0]} is a ${sub.format} where ${sides[1]} is a ${sup.format}`);
      return;
    case "array":
      fits(sub.items, sup.items, `${path}[]`, out, sides);
      return;
    case "object": {
      if (sub.loose || sup.loose) return;
      const [subName, supName] = sides;
      for (const name of new Set([...Object.keys(sub.props), ...Object.keys(sup.props)])) {
        const f = sub.props[name], g = sup.props[name], at = `${path}.${name}`;
        if (f && g) {
          if (g.required && !f.required) out.push(`${at}: optional in ${subName}, required in ${supName}`);
          fits(f.shape, g.shape, at, out, sides);
        } else if (f && sup.extra) {
          fits(f.shape, sup.extra, at, out, sides);
        } else if (f) {
          // The document has a field the SDK lacks (only a required one
          // matters), or the SDK sends one the document does not take.
          if (!sides.sdkIsSup) out.push(`${at}: sent by the SDK, not taken in the document`);
          else if (f.required) out.push(`${at}: required in the document, not in the SDK`);
        } else {
          // The SDK reads a field the server never answers, or the
          // document requires one the SDK never sends.
          if (sides.sdkIsSup) out.push(`${at}: in the SDK, not answered in the document`);
          else if (g.required) out.push(`${at}: required in the document, not in the SDK`);
        }
      }
      return;
    }
  }
}

// differences lists, for one type, what keeps the SDK and the document
// apart; none means they agree.
export function differences(types, doc, name, [dir, where]) {
  const sdk = sdkShape(types, name);
  const schema = docShape(doc, place(doc, where));
  const out = [];
  if (dir === "out") {
    // What the server answers must be a value of the SDK's type.
    const sides = Object.assign(["the document", "the SDK"], { sdkIsSup: true });
    fits(schema, sdk, name, out, sides);
  } else {
    // What the app sends must be a value the server takes.
    const sides = Object.assign(["the SDK", "the document"], { sdkIsSup: false });
    fits(sdk, schema, name, out, sides);
  }
  return out;
}
