import { bytesToHex } from "@noble/hashes/utils.js";
import { hmacSha256, timingSafeEqual } from "../platform/crypto";

/** Slack's replay window: a request signed more than 5 minutes from now is refused. */
export const REPLAY_WINDOW_SECONDS = 5 * 60;

/** `v0=` + hex HMAC-SHA256 of `v0:<timestamp>:<raw body>` under the signing secret. */
export async function slackSignature(secret: string, timestamp: string, body: string): Promise<string> {
  return `v0=${bytesToHex(hmacSha256(secret, `v0:${timestamp}:${body}`))}`;
}

export type SignatureVerdict = "ok" | "missing" | "stale" | "invalid";

export async function verifySlackSignature(
  secret: string,
  timestamp: string | undefined,
  signature: string | undefined,
  body: string,
  nowSeconds = Math.floor(Date.now() / 1000),
): Promise<SignatureVerdict> {
  if (!timestamp || !signature) return "missing";
  if (!/^\d{1,12}$/.test(timestamp)) return "invalid";
  if (Math.abs(nowSeconds - Number(timestamp)) > REPLAY_WINDOW_SECONDS) return "stale";
  return timingSafeEqual(await slackSignature(secret, timestamp, body), signature) ? "ok" : "invalid";
}
