import { hmacSha256, timingSafeEqual } from "../platform/crypto";
import { base64url } from "../platform/ids";

/**
 * The `state` of the Slack install: `<payload>.<mac>`, payload the base64url JSON of the
 * workspace, the user, a random nonce and the expiry (10 minutes), mac an HMAC-SHA256 over it
 * keyed by `SLACK_CLIENT_SECRET`. The callback accepts it once (its nonce is recorded).
 */

export const STATE_TTL_MS = 10 * 60_000;

export type InstallState = { workspaceId: string; userId: string; nonce: string; expiresAt: number };

type Payload = { w: string; u: string; n: string; e: number };

const mac = (secret: string, payload: string): string =>
  base64url(hmacSha256(secret, `slack-install-state.${payload}`));

export async function signState(
  secret: string,
  workspaceId: string,
  userId: string,
  now = Date.now(),
): Promise<string> {
  const nonce = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const payload: Payload = { w: workspaceId, u: userId, n: nonce, e: now + STATE_TTL_MS };
  const encoded = base64url(new TextEncoder().encode(JSON.stringify(payload)));
  return `${encoded}.${mac(secret, encoded)}`;
}

export type StateVerdict = { ok: true; state: InstallState } | { ok: false; reason: "invalid" | "expired" };

/** Checks the signature and the expiry (not the single use: see `redeemState` in install.ts). */
export async function verifyState(secret: string, state: string, now = Date.now()): Promise<StateVerdict> {
  const [encoded, given, extra] = state.split(".");
  if (!encoded || !given || extra !== undefined || state.length > 1024) return { ok: false, reason: "invalid" };
  if (!timingSafeEqual(mac(secret, encoded), given)) return { ok: false, reason: "invalid" };
  let payload: Payload;
  try {
    const b64 = encoded.replaceAll("-", "+").replaceAll("_", "/");
    payload = JSON.parse(atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4))) as Payload;
  } catch {
    return { ok: false, reason: "invalid" };
  }
  if (typeof payload.w !== "string" || typeof payload.u !== "string" || typeof payload.n !== "string")
    return { ok: false, reason: "invalid" };
  if (typeof payload.e !== "number" || now > payload.e) return { ok: false, reason: "expired" };
  return { ok: true, state: { workspaceId: payload.w, userId: payload.u, nonce: payload.n, expiresAt: payload.e } };
}
