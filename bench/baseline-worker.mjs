// Baseline for GET /v1/agents: the same two D1 reads as the service (token hash → token,
// user, workspace; then the workspace's agents, default first, enabled, by slug) with raw
// prepared statements, the same checks and the same response body, and nothing else: no
// router, no middleware, no validation. Our route's req/s divided by this one's is the cost
// of our framework, validation and middleware.

const AUTH_SQL = `SELECT t.id, t.scopes, t.expires_at, u.id AS user_id, u.role, w.id AS workspace_id
  FROM api_tokens t
  JOIN users u ON u.id = t.user_id
  JOIN workspaces w ON w.id = t.workspace_id
  WHERE t.token_hash = ?1 AND t.revoked_at IS NULL AND u.erased_at IS NULL`;

const LIST_SQL = `SELECT * FROM agents WHERE workspace_id = ?1
  ORDER BY is_default DESC, status <> 'enabled' ASC, slug ASC`;

// Prepared once per isolate, on first use (the global scope does no I/O).
let statements;
const prepared = (db) => (statements ??= { auth: db.prepare(AUTH_SQL), list: db.prepare(LIST_SQL) });

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
async function sha256Hex(text) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  let out = "";
  for (const b of digest) out += HEX[b];
  return out;
}

const json = (status, body) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

const arr = (s) => (s ? JSON.parse(s) : []);

// Same shape as src/agents/service.ts toAgentRow, so both bodies are byte-comparable.
const toAgentRow = (a) => ({
  id: a.id,
  slug: a.slug,
  display_name: a.display_name,
  aliases: arr(a.aliases),
  cautions: arr(a.cautions),
  languages: arr(a.languages),
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
