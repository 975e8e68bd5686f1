// Cursor helpers: a list route's pages, or its items one by one, as async
// iterators that ask for the next page only when the last one is used up.
import type { Cursor, Paged } from "./types.js";

/** A function that fetches one page, given the cursor of the page before (none for the first). */
export type PageFetcher<T> = (cursor?: Cursor) => Promise<Paged<T>>;

/** pages yields every page of a list, following pageInfo.nextCursor until it is null. */
export async function* pages<T>(fetchPage: PageFetcher<T>, opts: { signal?: AbortSignal } = {}): AsyncGenerator<Paged<T>, void, undefined> {
  let cursor: Cursor | undefined;
  const seen = new Set<Cursor>();
  for (;;) {
    opts.signal?.throwIfAborted();
    const page = await fetchPage(cursor);
    yield page;
    const next = page.pageInfo?.nextCursor;
    if (!next) return;
    // A server that hands back a cursor it gave before would loop forever.
    if (seen.has(next)) throw new Error(`the list answered the cursor ${next} twice`);
    seen.add(next);
    cursor = next;
  }
}

/**
 * paginate yields every item of a list, page after page:
 *
 *   for await (const a of paginate((cursor) => client.listAssets(id, { cursor, limit: 200 }))) …
 */
export async function* paginate<T>(fetchPage: PageFetcher<T>, opts: { signal?: AbortSignal } = {}): AsyncGenerator<T, void, undefined> {
  for await (const page of pages(fetchPage, opts)) yield* page.items;
}

/** collect reads a whole list into an array (at most `max` items, when given). */
export async function collect<T>(items: AsyncIterable<T>, max = Infinity): Promise<T[]> {
  const out: T[] = [];
  if (max <= 0) return out;
  for await (const item of items) {
    out.push(item);
    if (out.length >= max) break;
  }
  return out;
}
