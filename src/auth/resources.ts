/**
 * RFC 8707 resource indicators: the protected resources an OAuth token of this service can
 * be bound to. Each has its own RFC 9728 metadata document, and a token bound to one is
 * refused by the other; a token bound to none (no `resource` at authorize or token) works
 * on the whole API, as tokens always have.
 *
 * - the API, `{base}`: every route under /v1 except the MCP endpoint;
 * - the service's MCP server, `{base}/v1/mcp` (Streamable HTTP).
 */
export const MCP_PATH = "/v1/mcp";

export const apiResource = (base: string): string => base;
export const mcpResource = (base: string): string => `${base}${MCP_PATH}`;

/**
 * The RFC 9728 metadata URL of one of our resources: `{base}/.well-known/oauth-protected-resource`
 * for the API, with the resource's path after it for the MCP server (§3.1).
 */
export function resourceMetadataUrl(base: string, resource: string): string {
  const path = resource.startsWith(base) ? resource.slice(base.length) : "";
  return `${base}/.well-known/oauth-protected-resource${path}`;
}

/**
 * The canonical form of a presented `resource` when it names one of ours, else null. Scheme
 * and host compare case-insensitively and a trailing slash is ignored (the MCP authorization
 * spec asks servers to accept both); a fragment, credentials or a query never match.
 */
export function canonicalResource(base: string, presented: string): string | null {
  if (!URL.canParse(presented) || presented.includes("#")) return null;
  const url = new URL(presented);
  if (url.username || url.password || url.search) return null;
  const candidate = `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
  for (const known of [apiResource(base), mcpResource(base)]) {
    const k = new URL(known);
    if (candidate === `${k.origin}${k.pathname.replace(/\/+$/, "")}`) return known;
  }
  return null;
}

/** Whether a credential bound to `bound` (null: unbound) may be used at `resource`. */
export const usableAt = (bound: string | null | undefined, resource: string): boolean => !bound || bound === resource;
