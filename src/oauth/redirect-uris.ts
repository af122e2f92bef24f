/**
 * Redirect URI rules. Registration accepts absolute `https` URIs and loopback `http` URIs,
 * without fragments or credentials. At authorize time a URI must equal a registered one
 * character for character, except that a loopback `http` URI may carry any port (RFC 8252
 * §7.3: native apps pick a free port at run time).
 */
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "[::1]", "localhost"]);
export const MAX_REDIRECT_URI_LENGTH = 2000;

/** Why a URI cannot be registered, or null when it can. */
export function redirectUriProblem(uri: string): string | null {
  if (uri.length > MAX_REDIRECT_URI_LENGTH) return `must be at most ${MAX_REDIRECT_URI_LENGTH} characters`;
  if (uri.includes("#")) return "must not contain a fragment";
  // The URL parser strips or rewrites these without a word, so the text would differ from the URI used.
  if (/[\u0000-\u0020\u007f\\]/.test(uri)) return "must not contain spaces, control characters or backslashes";
  if (!URL.canParse(uri)) return "must be an absolute URI";
  const url = new URL(uri);
  if (url.username || url.password) return "must not contain credentials";
  if (url.protocol === "https:") return url.hostname ? null : "must name a host";
  if (url.protocol === "http:")
    return LOOPBACK_HOSTS.has(url.hostname)
      ? null
      : "http is allowed only for loopback hosts (127.0.0.1, [::1], localhost); use https";
  return "must use https (or http on a loopback host)";
}

const isLoopbackHttp = (url: URL) => url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname);

/** The registered URI that `presented` matches, or null. */
export function matchRedirectUri(registered: readonly string[], presented: string): string | null {
  if (registered.includes(presented)) return presented;
  if (presented.includes("#") || !URL.canParse(presented)) return null;
  const p = new URL(presented);
  if (!isLoopbackHttp(p)) return null;
  for (const r of registered) {
    if (!URL.canParse(r)) continue;
    const u = new URL(r);
    if (
      isLoopbackHttp(u) &&
      u.hostname === p.hostname &&
      u.pathname === p.pathname &&
      u.search === p.search &&
      !p.username &&
      !p.password
    )
      return r;
  }
  return null;
}
