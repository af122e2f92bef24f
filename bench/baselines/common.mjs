// What the raw baseline Workers share, written as plainly as a hand-made Worker would: ids,
// hashing, the JSON answer, and the turn baselines' request (route, bearer token, scope, body).

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

export function hex(bytes) {
  let out = "";
  for (const b of bytes) out += HEX[b];
  return out;
}

export const sha256Hex = async (text) =>
  hex(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))));

// UUIDv7 like the service's ids (time-ordered primary keys insert at the end of the index).
export function uuidv7() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  const ms = Date.now();
  for (let i = 5; i >= 0; i--) b[5 - i] = Math.floor(ms / 2 ** (8 * i)) & 0xff;
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = hex(b);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export const json = (status, body, headers = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });

/**
 * `POST /v1/api/conversations/{id}/messages { content }` checked as the service checks it:
 * `{ response }` to answer at once, or the caller's token row (`tokenOf(bearer)`) and the user
 * message (id from `newId`) to write.
 */
export async function turnRequest(request, tokenOf, newId = uuidv7) {
  const match = /^\/v1\/api\/conversations\/([^/]+)\/messages$/.exec(new URL(request.url).pathname);
  if (request.method !== "POST" || !match) return { response: json(404, { code: "not_found" }) };
  const bearer = /^Bearer +(\S+)$/i.exec(request.headers.get("Authorization") ?? "");
  if (!bearer) return { response: json(401, { code: "unauthenticated" }) };
  const token = await tokenOf(bearer[1]);
  if (!token || (token.expires_at !== null && Date.parse(token.expires_at) <= Date.now()))
    return { response: json(401, { code: "invalid_token" }) };
  if (!JSON.parse(token.scopes).includes("conversations:write"))
    return { response: json(403, { code: "insufficient_scope" }) };
  const { content } = await request.json();
  if (typeof content !== "string" || !content) return { response: json(400, { code: "invalid_body" }) };
  const userMessage = {
    id: newId(),
    conversation_id: match[1],
    role: "user",
    author_user_id: token.user_id,
    content,
    created_at: new Date().toISOString(),
  };
  return { token, userMessage };
}
