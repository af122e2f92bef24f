import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { sniffImageType } from "../platform/media-types";
import { badRequest } from "../platform/problem";

/**
 * Agent avatars in R2, content-addressed under `avatars/<workspace id>/<sha256 hex>`. The
 * download URL carries the same two parts: it needs no credential (avatars go in `<img>`
 * tags), lists nothing, and cannot be guessed without the image itself.
 */

export const MAX_AVATAR_BYTES = 1024 * 1024;
/** Generated images are not capped by the upload limit, only kept sane. */
export const MAX_GENERATED_AVATAR_BYTES = 10 * 1024 * 1024;
export const AVATAR_CACHE_CONTROL = "public, max-age=31536000, immutable";

export type AvatarImage = { bytes: Uint8Array; contentType: string };

const DATA_URL_PREFIX = /^data:[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+(?:;[a-z0-9_.-]+=[^;,]*)*;base64,/i;

/**
 * Decodes an uploaded avatar (`data:` prefix accepted, whitespace ignored) and validates it:
 * empty, not base64, over 1 MiB decoded, or not PNG, JPEG, WebP or GIF is a 400.
 */
export function decodeAvatarUpload(input: string): AvatarImage {
  const b64 = input.trim().replace(DATA_URL_PREFIX, "").replace(/\s+/g, "");
  const field = (message: string) => [{ path: "image_base64", message }];
  if (b64.length === 0) throw badRequest("empty_image", "The image is empty", field("empty"));
  // Checked before decoding so an oversized upload costs no decode.
  const decodedLength = Math.floor((b64.length * 3) / 4) - (b64.endsWith("==") ? 2 : b64.endsWith("=") ? 1 : 0);
  if (decodedLength > MAX_AVATAR_BYTES)
    throw badRequest("image_too_large", "The image exceeds 1 MiB", field("at most 1 MiB decoded"));
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(b64) || b64.length % 4 === 1) {
    throw badRequest("invalid_image", "The image is not valid base64", field("not base64"));
  }
  let bin: string;
  try {
    bin = atob(b64.replaceAll("-", "+").replaceAll("_", "/"));
  } catch {
    // Padding on a quantum that is not complete ("abc=" is fine, "ab=" is not) passes the pattern above.
    throw badRequest("invalid_image", "The image is not valid base64", field("not base64"));
  }
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  if (bytes.length === 0) throw badRequest("empty_image", "The image is empty", field("empty"));
  const contentType = sniffImageType(bytes);
  if (!contentType)
    throw badRequest("unsupported_image", "The image must be PNG, JPEG, WebP or GIF", field("unsupported type"));
  return { bytes, contentType };
}

export const avatarKey = (workspaceId: string, hash: string) => `avatars/${workspaceId}/${hash}`;
export const avatarUrl = (origin: string, workspaceId: string, hash: string) =>
  `${origin}/v1/avatars/${workspaceId}/${hash}`;

/** Stores the image under its content hash (idempotent) and returns its absolute URL. */
export async function storeAvatar(
  env: Env,
  origin: string,
  workspaceId: string,
  image: AvatarImage,
): Promise<{ url: string; hash: string }> {
  const hash = bytesToHex(sha256(image.bytes));
  await env.FILES.put(avatarKey(workspaceId, hash), image.bytes, {
    httpMetadata: { contentType: image.contentType, cacheControl: AVATAR_CACHE_CONTROL },
    sha256: hash,
  });
  return { url: avatarUrl(origin, workspaceId, hash), hash };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;

/** The stored avatar's key, or null when the parts cannot name one (answered as 404). */
export function avatarKeyFromUrlParts(workspaceId: string, hash: string): string | null {
  return UUID.test(workspaceId) && SHA256_HEX.test(hash) ? avatarKey(workspaceId, hash) : null;
}

// ---- generated monogram ----

const escapeXml = (s: string) => s.replace(/[<>&"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

/** Up to two initials from the display name (first letters of its first two words), else from the slug. */
export function initials(displayName: string, slug: string): string {
  const words = displayName.match(/[\p{L}\p{N}]+/gu) ?? [];
  const letters = words.slice(0, 2).map((w) => Array.from(w)[0]!.toLocaleUpperCase("en"));
  return letters.join("") || slug.slice(0, 1).toUpperCase();
}

/**
 * The default avatar: an SVG monogram on a colour derived from the slug, so the same agent
 * always gets the same picture (and the same content-addressed key).
 */
export function monogramAvatar(slug: string, displayName: string): AvatarImage {
  const digest = sha256(utf8ToBytes(slug));
  const hue = ((digest[0]! << 8) | digest[1]!) % 360;
  const text = escapeXml(initials(displayName, slug));
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256" viewBox="0 0 256 256" role="img" aria-label="${text}">` +
    `<rect width="256" height="256" rx="56" fill="hsl(${hue}, 55%, 42%)"/>` +
    `<text x="128" y="128" dy="0.35em" text-anchor="middle" fill="#ffffff" font-size="${text.length > 1 ? 104 : 128}" font-weight="600" ` +
    `font-family="system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif">${text}</text></svg>`;
  return { bytes: utf8ToBytes(svg), contentType: "image/svg+xml" };
}
