/**
 * Which URLs the guarded fetch may request, and where a request actually goes
 * (`OUTBOUND_ORIGIN_MAP` serves mapped hosts from another origin in development and tests).
 */
import { BlockedUrlError } from "./outbound-errors";

const LOCAL_SUFFIXES = [".localhost", ".local", ".internal", ".localdomain", ".home.arpa", ".lan", ".intranet"];

/** Why a host may not be fetched, or null when it may. `hostname` as `URL` gives it. */
export function blockedHostReason(hostname: string): string | null {
  const host = hostname.toLowerCase().replace(/\.+$/, "");
  if (host === "") return "no host";
  if (host.startsWith("[") || host.includes(":")) return "IP address literals are not allowed";
  const labels = host.split(".");
  const last = labels[labels.length - 1]!;
  // The URL parser turns every IPv4 form (2130706433, 0x7f.1, 0177.0.0.1) into dotted
  // decimal; a name whose last label is numeric is an IPv4 literal to any other parser too.
  if (/^(0x[0-9a-f]*|[0-9]+)$/i.test(last) || /^[0-9.]+$/.test(host)) return "IP address literals are not allowed";
  if (host === "localhost" || LOCAL_SUFFIXES.some((s) => host.endsWith(s))) return "local host names are not allowed";
  if (labels.length < 2) return "single-label host names are not allowed";
  return null;
}

/** `OUTBOUND_ORIGIN_MAP`: host (or origin) → the origin that serves it instead. */
export function originMap(env: Env): Map<string, string> {
  if (!env.OUTBOUND_ORIGIN_MAP) return new Map();
  let parsed: unknown;
  try {
    parsed = JSON.parse(env.OUTBOUND_ORIGIN_MAP);
  } catch {
    throw new Error("OUTBOUND_ORIGIN_MAP is not valid JSON");
  }
  const map = new Map<string, string>();
  for (const [key, value] of Object.entries(parsed as Record<string, unknown>)) {
    if (typeof value === "string") map.set(key.toLowerCase().replace(/\/+$/, ""), value.replace(/\/+$/, ""));
  }
  return map;
}

/** Whether `OUTBOUND_ORIGIN_MAP` maps the host (local development and tests only). */
export function isMappedHost(env: Env, host: string): boolean {
  const map = originMap(env);
  const h = host.toLowerCase();
  return map.has(h) || map.has(`https://${h}`) || map.has(`http://${h}`);
}

const mappedOrigin = (map: Map<string, string>, url: URL) =>
  map.get(url.origin) ?? map.get(url.host) ?? map.get(url.hostname) ?? null;

/** Checks one URL against the rules and answers where to send the request. */
export function checkedTarget(raw: string, map: Map<string, string>): { url: URL; sendTo: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new BlockedUrlError(raw, "not a valid URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new BlockedUrlError(raw, "only http and https URLs are fetched");
  }
  if (url.username || url.password) throw new BlockedUrlError(raw, "URLs with credentials are not fetched");
  const mapped = mappedOrigin(map, url);
  if (mapped) return { url, sendTo: `${mapped}${url.pathname}${url.search}` };
  if (url.protocol === "http:") throw new BlockedUrlError(raw, "only https URLs are fetched");
  const reason = blockedHostReason(url.hostname);
  if (reason) throw new BlockedUrlError(raw, reason);
  return { url, sendTo: url.href };
}

export function userAgent(env: Env, origin?: string): string {
  const base = (env.BASE_URL || origin || "").replace(/\/+$/, "");
  return base ? `WorkspaceAgentService/1.0 (+${base})` : "WorkspaceAgentService/1.0";
}
