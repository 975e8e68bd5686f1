/// <reference types="node" />
// Files from disk for uploadFiles, in Node (kilo-sdk/node): each file is a
// Blob that reads from disk as it is sent, never held whole in memory
// until it is hashed.
import { openAsBlob } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { basename, extname, join } from "node:path";

/** The extensions Lightbox takes (DESIGN.md §8), lowercase with the dot. */
export const photoExtensions: ReadonlySet<string> = new Set([".jpg", ".jpeg", ".png", ".gif", ".webp", ".tif", ".tiff",
  ".heic", ".heif", ".hif", ".avif", ".jxl", ".dng", ".cr2", ".cr3", ".crw", ".nef", ".nrw", ".arw", ".raf", ".orf",
  ".rw2", ".pef", ".srw"]);

/** fileFromPath is one file on disk as an upload source. */
export async function fileFromPath(path: string): Promise<{ name: string; blob: Blob }> {
  return { name: basename(path), blob: await openAsBlob(path) };
}

/**
 * filesInFolder lists the photos in a folder (and its subfolders, unless
 * recursive is false), in name order, as upload sources.
 */
export async function filesInFolder(dir: string, opts: { recursive?: boolean; extensions?: ReadonlySet<string> } = {}): Promise<Array<{ name: string; blob: Blob }>> {
  const exts = opts.extensions ?? photoExtensions;
  const out: Array<{ name: string; blob: Blob }> = [];
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
  for (const ent of entries) {
    const path = join(dir, ent.name);
    if (ent.isDirectory() || (ent.isSymbolicLink() && (await stat(path)).isDirectory())) {
      if (opts.recursive !== false) out.push(...(await filesInFolder(path, opts)));
    } else if (exts.has(extname(ent.name).toLowerCase())) {
      out.push(await fileFromPath(path));
    }
  }
  return out;
}
