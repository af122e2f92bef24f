// Baselines: the same D1 work as two of the service's routes with raw prepared statements,
// the same checks and the same response body, and nothing else: no router, no middleware,
// no validation. Our route's req/s divided by this one's is the cost of our framework,
// validation and middleware.
//
//   GET /v1/agents          the two reads of the service (token hash → token, user,
//                           workspace; then the workspace's agents, default first, enabled,
//                           by slug)
//   POST /v1/oauth/token    grant_type=refresh_token for a public client (auth method none):
//                           the client read, then the rotation batch of src/oauth/refresh.ts
//                           (conditional UPDATE ... RETURNING and two INSERT ... SELECT)

import { json, sha256Hex, uuidv7 } from "./common.mjs";

const AUTH_SQL = `SELECT t.id, t.scopes, t.expires_at, u.id AS user_id, u.role, w.id AS workspace_id
  FROM api_tokens t
  JOIN users u ON u.id = t.user_id
  JOIN workspaces w ON w.id = t.workspace_id
  WHERE t.token_hash = ?1 AND t.revoked_at IS NULL AND u.erased_at IS NULL`;

const LIST_SQL = `SELECT * FROM agents WHERE workspace_id = ?1
  ORDER BY is_default DESC, status <> 'enabled' ASC, slug ASC`;

const CLIENT_SQL = `SELECT * FROM oauth_clients WHERE client_id = ?1 AND disabled_at IS NULL`;

// Copied from src/oauth/refresh.ts (ROTATE_REFRESH, INSERT_TOKEN_AFTER_ROTATION).
const ROTATE_SQL = `UPDATE oauth_tokens SET revoked_at = ?1, replaced_by = ?2
  WHERE token_hash = ?3 AND kind = 'refresh' AND revoked_at IS NULL AND expires_at > ?1
    AND EXISTS (SELECT 1 FROM oauth_grants g WHERE g.id = oauth_tokens.grant_id AND g.client_id = ?4 AND g.revoked_at IS NULL)
  RETURNING (SELECT scopes FROM oauth_grants WHERE oauth_grants.id = oauth_tokens.grant_id) AS scopes`;
const INSERT_AFTER_ROTATION_SQL = `INSERT INTO oauth_tokens (id, grant_id, kind, token_hash, created_at, expires_at)
  SELECT ?1, grant_id, ?2, ?3, ?4, ?5 FROM oauth_tokens WHERE token_hash = ?6 AND replaced_by = ?7`;

// Prepared once per isolate, on first use (the global scope does no I/O).
let statements;
const prepared = (db) =>
  (statements ??= {
    auth: db.prepare(AUTH_SQL),
    list: db.prepare(LIST_SQL),
    client: db.prepare(CLIENT_SQL),
    rotate: db.prepare(ROTATE_SQL),
    insertAfterRotation: db.prepare(INSERT_AFTER_ROTATION_SQL),
  });

const base64url = (bytes) =>
  btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
const randomToken = (prefix) => prefix + base64url(crypto.getRandomValues(new Uint8Array(32)));

const ACCESS_TTL_S = 3600;
const REFRESH_TTL_S = 30 * 86_400;
const NO_STORE = { "cache-control": "no-store" };

async function refresh(request, env) {
  const params = new URLSearchParams(await request.text());
  const clientId = params.get("client_id");
  const refreshToken = params.get("refresh_token");
  if (params.get("grant_type") !== "refresh_token" || !clientId || !refreshToken)
    return json(400, { error: "invalid_request" });
  const s = prepared(env.DB);
  const client = await s.client.bind(clientId).first();
  if (client?.auth_method !== "none") return json(401, { error: "invalid_client" });
  const now = Date.now();
  const nowIso = new Date(now).toISOString();
  const access = randomToken("svc_at_");
  const next = randomToken("svc_rt_");
  const [oldHash, accessHash, nextHash] = await Promise.all([
    sha256Hex(refreshToken),
    sha256Hex(access),
    sha256Hex(next),
  ]);
  const accessId = uuidv7();
  const nextId = uuidv7();
  const [rotated] = await env.DB.batch([
    s.rotate.bind(nowIso, nextId, oldHash, clientId),
    s.insertAfterRotation.bind(
      accessId,
      "access",
      accessHash,
      nowIso,
      new Date(now + ACCESS_TTL_S * 1000).toISOString(),
      oldHash,
      nextId,
    ),
    s.insertAfterRotation.bind(
      nextId,
      "refresh",
      nextHash,
      nowIso,
      new Date(now + REFRESH_TTL_S * 1000).toISOString(),
      oldHash,
      nextId,
    ),
  ]);
  const row = rotated.results[0];
  if (!row) return json(400, { error: "invalid_grant" }, NO_STORE);
  return json(
    200,
    {
      access_token: access,
      token_type: "Bearer",
      expires_in: ACCESS_TTL_S,
      refresh_token: next,
      scope: JSON.parse(row.scopes).join(" "),
    },
    NO_STORE,
  );
}

const arr = (s) => (s ? JSON.parse(s) : []);

// Same shape as src/agents/service.ts toAgentRow, so both bodies are byte-comparable.
const toAgentRow = (a) => ({
  id: a.id,
  slug: a.slug,
  display_name: a.display_name,
  aliases: arr(a.aliases),
  cautions: arr(a.cautions),
  languages: arr(a.languages),
  approval_required: arr(a.approval_required),
  runtime_profile: a.runtime_profile,
  delivery_mode: a.delivery_mode,
  status: a.status,
  is_default: a.is_default === 1,
  instructions_is_default: a.instructions_is_default === 1,
  created_at: a.created_at,
  avatar_url: a.avatar_url,
  description: a.description,
  instructions: a.instructions,
  model: a.model,
  tone: a.tone,
  verbosity: a.verbosity,
});

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (request.method === "POST" && url.pathname === "/v1/oauth/token") return refresh(request, env);
    if (request.method !== "GET" || url.pathname !== "/v1/agents") return json(404, { error: "not_found" });
    const match = /^Bearer +(\S+)$/i.exec(request.headers.get("Authorization") ?? "");
    if (!match) return json(401, { error: "unauthenticated" });
    const s = prepared(env.DB);
    const token = await s.auth.bind(await sha256Hex(match[1])).first();
    if (!token || (token.expires_at !== null && Date.parse(token.expires_at) <= Date.now())) {
      return json(401, { error: "invalid_token" });
    }
    if (!JSON.parse(token.scopes).includes("agents:read")) return json(403, { error: "insufficient_scope" });
    const { results } = await s.list.bind(token.workspace_id).all();
    return json(200, { agents: results.map(toAgentRow) });
  },
};
