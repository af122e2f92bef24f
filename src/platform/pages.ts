import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { timingSafeEqual } from "./crypto";
import { baseUrl } from "./env";
import { randomToken } from "./ids";

/** Headers of every server-rendered page: no framing, no referrer, no caching, no scripts. */
export const PAGE_HEADERS: Record<string, string> = {
  "X-Frame-Options": "DENY",
  "Content-Security-Policy":
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  // Not `no-referrer`: under it a browser posts our own forms with `Origin: null`, which the
  // same-origin check must refuse. `same-origin` still sends no Referer to any other site.
  "Referrer-Policy": "same-origin",
  "Cache-Control": "no-store",
};

const CSRF_COOKIE = "svc_csrf";

/**
 * Double-submit CSRF token for signed-out forms: a random cookie (SameSite=Strict, HttpOnly)
 * whose value the form echoes in `csrf_token`.
 */
export function csrfToken(c: Context): string {
  const existing = getCookie(c, CSRF_COOKIE);
  if (existing && existing.length >= 43) return existing;
  const token = randomToken("");
  setCookie(c, CSRF_COOKIE, token, { httpOnly: true, secure: true, sameSite: "Strict", path: "/v1/" });
  return token;
}

export function csrfValid(c: Context, submitted: unknown): boolean {
  const cookie = getCookie(c, CSRF_COOKIE);
  return typeof submitted === "string" && !!cookie && cookie.length >= 43 && timingSafeEqual(cookie, submitted);
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Whether a browser tells us that this state-changing request was started by another origin:
 * an `Origin` that is not ours (BASE_URL or the request's own), or, without `Origin`, a
 * `Sec-Fetch-Site` other than `same-origin` (`none` is a person typing the URL). Clients that
 * are not browsers send neither header. SameSite=Lax alone lets every sibling subdomain through.
 */
export function crossOriginWrite(c: Context): boolean {
  if (SAFE_METHODS.has(c.req.method)) return false;
  const origin = c.req.header("Origin");
  if (origin !== undefined) {
    const own = new URL(c.req.url).origin;
    return origin !== own && origin !== new URL(baseUrl(c.env, c.req.url)).origin;
  }
  const site = c.req.header("Sec-Fetch-Site");
  return site !== undefined && site !== "same-origin" && site !== "none";
}
