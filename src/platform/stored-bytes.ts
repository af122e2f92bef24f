/**
 * Headers for a response that serves stored bytes (R2) exactly as stored. Left alone, the edge
 * (and wrangler dev, which imitates it) gzips compressible types for a client that accepts gzip:
 * the body goes out chunked without `Content-Length`, and a 206 carries gzip of the slice
 * rather than the slice. `Content-Encoding: identity` keeps the runtime from compressing, and
 * `no-transform` (added to the route's own directives) asks the edge and any proxy the same, so
 * `Content-Length`, `ETag` and ranges hold for every client.
 */
export function asStored(cacheControl: string): Record<string, string> {
  return { "Content-Encoding": "identity", "Cache-Control": `${cacheControl}, no-transform` };
}
